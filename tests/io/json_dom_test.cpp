// The linear-time document builder behind every JSON and UBJSON reader: the same document as
// nlohmann's own parser (its ground truth), duplicate keys included, the limits of
// parse_bounded, and inputs that nlohmann's builders take quadratic time over.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "gradscope/core/error.h"
#include "internal/json_dom.h"
#include "internal/json_field.h"

namespace gradscope {
namespace {

using Json = nlohmann::ordered_json;

Json built(const std::string& text) {
  Json doc;
  internal::JsonDom dom(doc);
  Json::sax_parse(text, &dom);
  return doc;
}

std::string error_of(const std::string& text, int depth, std::size_t members) {
  try {
    internal::parse_bounded(text, depth, members);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

// Seconds `f` takes.
template <class F>
double seconds(F f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(JsonDom, BuildsWhatNlohmannsParserBuilds) {
  std::string many = "{";
  for (int i = 0; i < 40; ++i) many += (i ? ",\"k" : "\"k") + std::to_string(i % 25) + "\":" + std::to_string(i);
  many += "}";
  for (const std::string text :
       {std::string("{}"), std::string("[]"), std::string("3"), std::string("\"s\""), std::string("null"),
        std::string(R"({"b":1,"a":[1,-2,3.5,"x",null,true,false,{"z":{}}],"c":{"d":[[]]}})"),
        std::string(R"({"a":1,"a":2,"b":3,"a":4})"),  // a repeated key: first place, last value
        std::string(R"([{"x":1},{"x":2,"x":[3]},18446744073709551615,-9223372036854775808,1e300])"),
        many}) {
    SCOPED_TRACE(text);
    const Json expect = Json::parse(text);
    const Json got = built(text);
    EXPECT_EQ(got, expect);
    EXPECT_EQ(got.dump(), expect.dump());  // the members in the same order
  }
  // Repeated keys once the object has its hash index (16 members and more).
  const Json m = built(many);
  ASSERT_EQ(m.size(), 25u);
  EXPECT_EQ(m.at("k3").get<int>(), 28);
  EXPECT_EQ(m.at("k24").get<int>(), 24);
  EXPECT_EQ(m.begin().key(), "k0");
}

TEST(JsonDom, BuildsWhatNlohmannBuildsFromUbjson) {
  const Json doc = Json::parse(R"({"n":[1,2.5,-3],"s":"t","o":{"p":null,"q":true},"e":[]})");
  const std::vector<std::uint8_t> bytes = Json::to_ubjson(doc);
  Json got;
  internal::JsonDom dom(got);
  ASSERT_TRUE(Json::sax_parse(bytes, &dom, nlohmann::detail::input_format_t::ubjson));
  EXPECT_EQ(got, Json::from_ubjson(bytes));
}

TEST(JsonDom, ErrorsKeepTheParsersPositionAndTheLimitsHold) {
  try {
    internal::parse_bounded("{\"a\": [1, 2,, 3]}", 8, 10);
    ADD_FAILURE() << "parsed";
  } catch (const Json::parse_error& e) {
    EXPECT_EQ(e.byte, 13u);
  }
  EXPECT_EQ(error_of("[[[1]]]", 3, 10), "no error");
  EXPECT_EQ(error_of("[[[[1]]]]", 3, 10), "malformed: nested more than 3 deep");
  EXPECT_EQ(error_of("{\"a\":{\"b\":{\"c\":{}}}}", 3, 10), "malformed: nested more than 3 deep");
  EXPECT_EQ(error_of("{\"a\":1,\"b\":2}", 8, 2), "no error");
  EXPECT_EQ(error_of("{\"a\":1,\"b\":2,\"c\":3}", 8, 2), "malformed: an object of more than 2 members");
  EXPECT_EQ(error_of("[1,2,3,4]", 8, 2), "no error");  // arrays are not objects
  EXPECT_NE(error_of("{\"a\":1} x", 8, 2).find("parse error"), std::string::npos);
}

// nlohmann's builders took 7 s over an object of 99,000 members (ordered_map compares each new
// key with every earlier one) and 5.5 s over an array of 200,000 small objects (the callback
// builder scans the enclosing array at the end of each object): quadratic. Four times these
// sizes would take over a minute that way; linearly it takes well under a second, and the
// 20 s allowed leave room for a loaded machine.
TEST(JsonDom, ObjectsOfManyMembersAndArraysOfManyObjectsTakeLinearTime) {
  std::string members = "{";
  for (int i = 0; i < 100000; ++i) members += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":1";
  members += "}";
  std::string objects = "[";
  for (int i = 0; i < 800000; ++i) objects += i ? ",{\"x\":1}" : "{\"x\":1}";
  objects += "]";
  Json a, b;
  const double took = seconds([&] {
    a = internal::parse_bounded(members, 4, 100000);
    b = internal::parse_bounded(objects, 4, 100000);
  });
  EXPECT_EQ(a.size(), 100000u);
  EXPECT_EQ(a.at("k99999").get<int>(), 1);
  EXPECT_EQ(b.size(), 800000u);
  EXPECT_LT(took, 20.0) << "quadratic again?";
}

}  // namespace
}  // namespace gradscope
