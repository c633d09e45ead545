// Damaged XGBoost JSON models: a real model saved by XGBoost, edited one field at a time, must
// be refused with an Error naming the model and the field's path, whatever the damage (a
// cycle, a feature or child out of range, a wrong type, a truncation).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../common/error_of.h"
#include "gradscope/trees/data_files.h"
#include "gradscope/trees/read_model.h"
#include "gradscope/trees/xgboost_api.h"
#include "tree_test_util.h"

namespace gradscope::test {
namespace {

using nlohmann::json;

// Three rounds of binary:logistic on breast_cancer, as XGBoost saves them: JSON or UBJSON.
const std::pair<std::string, std::string>& saved() {
  static const std::pair<std::string, std::string> both = [] {
    const TreeData d = read_sklearn_csv(data_file("breast_cancer.csv"));
    XGBoostMatrix train(d);
    XGBoostBooster b({&train});
    b.set_params({{"objective", "binary:logistic"}, {"max_depth", "3"}, {"nthread", "1"}});
    for (int i = 0; i < 3; ++i) b.update(i, train);
    return std::pair{b.save_json(), b.save_ubjson()};
  }();
  return both;
}

const std::string& saved_model() { return saved().first; }

// The error of reading the saved model after `damage` was done to its JSON.
template <class Damage>
std::string error_after(Damage damage) {
  json doc = json::parse(saved_model());
  damage(doc);
  return error_of([&] { parse_xgboost_json(doc.dump(), "m.json"); });
}

json& tree0(json& doc) { return doc["learner"]["gradient_booster"]["model"]["trees"][0]; }
const std::string kTree0 = "xgboost model 'm.json': learner.gradient_booster.model.trees[0].";

TEST(XGBoostJsonErrors, NameTheModelAndTheField) {
  GRADSCOPE_REQUIRE_DATA(data_file("breast_cancer.csv"));
  EXPECT_EQ(error_after([](json&) {}), "no error");
  json doc = json::parse(saved_model());
  const std::size_t n = tree0(doc)["left_children"].size();
  const std::string nodes = std::to_string(n);
  EXPECT_EQ(error_after([](json& d) { tree0(d)["left_children"][0] = 0; }),
            kTree0 + "left_children[0]: child 0 is reached twice (not a tree)");
  EXPECT_EQ(error_after([](json& d) {
              auto& t = tree0(d);
              t["left_children"][1] = t["left_children"][0];  // node 1 shares node 0's child
            }),
            kTree0 + "left_children[1]: child 1 is reached twice (not a tree)");
  EXPECT_EQ(error_after([](json& d) { tree0(d)["right_children"][0] = 500; }),
            kTree0 + "left_children[0]: child 500 outside the tree's " + nodes + " nodes");
  EXPECT_EQ(error_after([](json& d) { tree0(d)["split_indices"][0] = 30; }),
            kTree0 + "split_indices[0]: feature 30 outside the model's 30 features");
  EXPECT_EQ(error_after([](json& d) { tree0(d)["split_indices"][0] = -1; }),
            kTree0 + "split_indices[0]: must be an integer from 0 to 2147483647, got -1");
  EXPECT_EQ(error_after([](json& d) { tree0(d)["left_children"][0] = "1"; }),
            kTree0 +
                "left_children[0]: must be an integer from -2147483648 to 2147483647, got "
                "a string");
  EXPECT_EQ(error_after([](json& d) { tree0(d)["split_conditions"].erase(0); }),
            kTree0 + "split_conditions: has " + std::to_string(n - 1) + " entries for " + nodes +
                " nodes");
  EXPECT_EQ(error_after([](json& d) { d["learner"]["learner_model_param"]["num_feature"] = "x"; }),
            "xgboost model 'm.json': learner.learner_model_param.num_feature: must be an integer "
            "from 0 to 2147483647, got \"x\"");
  EXPECT_EQ(error_after([](json& d) { d["learner"]["learner_model_param"]["base_score"] = "2"; }),
            "xgboost model 'm.json': learner.learner_model_param.base_score: must be between 0 "
            "and 1 for a logistic objective, got 2.000000");
  EXPECT_EQ(error_after([](json& d) { d["learner"]["gradient_booster"]["name"] = "gblinear"; }),
            "xgboost model 'm.json': learner.gradient_booster.name: \"gblinear\" has no trees "
            "(gradscope reads gbtree and dart)");
  EXPECT_EQ(error_after([](json& d) {
              d["learner"]["gradient_booster"]["model"]["gbtree_model_param"]["num_trees"] = "7";
            }),
            "xgboost model 'm.json': learner.gradient_booster.model.gbtree_model_param.num_trees: "
            "says 7 trees, the model holds 3");
  EXPECT_EQ(
      error_after([](json& d) { d["learner"]["gradient_booster"]["model"]["tree_info"][2] = 1; }),
      "xgboost model 'm.json': learner.gradient_booster.model.tree_info[2]: output 1 outside "
      "the model's 1");
  // Sized by before the trees are counted: 10^8 outputs would take 800 MB of base scores.
  EXPECT_EQ(
      error_after([](json& d) { d["learner"]["learner_model_param"]["num_class"] = "100000000"; }),
      "xgboost model 'm.json': learner.learner_model_param.num_class: 100000000 outputs, "
      "above the limit of 65536");
  EXPECT_EQ(error_after(
                [](json& d) { d["learner"]["learner_model_param"]["num_feature"] = "100000000"; }),
            "xgboost model 'm.json': learner.learner_model_param.num_feature: 100000000 features, "
            "above the limit of 67108864");
  EXPECT_EQ(error_after([](json& d) { d["learner"].erase("objective"); }),
            "xgboost model 'm.json': learner.objective: missing");
}

// XGBoost 3.1 and later write base_score in brackets, one value per output ("[5E-1]"): read as
// the number itself, and a damaged list is an Error naming the field and the value.
TEST(XGBoostJsonErrors, BracketedBaseScore) {
  GRADSCOPE_REQUIRE_DATA(data_file("breast_cancer.csv"));
  json doc = json::parse(saved_model());
  const TreeEnsemble plain = parse_xgboost_json(doc.dump(), "m.json");
  const std::string base = doc["learner"]["learner_model_param"]["base_score"];
  doc["learner"]["learner_model_param"]["base_score"] = "[" + base + "]";
  EXPECT_EQ(parse_xgboost_json(doc.dump(), "m.json").base_score, plain.base_score);
  const std::string field = "xgboost model 'm.json': learner.learner_model_param.base_score: ";
  auto with_base = [](const std::string& b) {
    return error_after([&](json& d) { d["learner"]["learner_model_param"]["base_score"] = b; });
  };
  EXPECT_EQ(with_base("[5E-1,5E-1]"), field + "more values than the model's 1 outputs");
  EXPECT_EQ(with_base("[]"), field + "must be a number or a bracketed list of numbers, got \"[]\"");
  EXPECT_EQ(with_base("[5E-1"), field + "must be a number or a bracketed list of numbers, got \"[5E-1\"");
  EXPECT_EQ(with_base("[x]"), field + "value 0 must be a finite number, got \"x\"");
  EXPECT_EQ(with_base("[5E-1,]"), field + "value 1 must be a finite number, got \"\"");
  EXPECT_EQ(with_base("[nan]"), field + "value 0 must be a finite number, got \"nan\"");
  EXPECT_EQ(with_base("[2]"), field + "must be between 0 and 1 for a logistic objective, got 2.000000");
}

TEST(XGBoostJsonErrors, TruncationAndNonFiniteLeaves) {
  GRADSCOPE_REQUIRE_DATA(data_file("breast_cancer.csv"));
  const std::string& text = saved_model();
  for (int k = 1; k < 20; ++k) {
    const std::size_t cut = text.size() * static_cast<std::size_t>(k) / 20;
    const std::string e = error_of([&] { parse_xgboost_json(text.substr(0, cut), "m.json"); });
    EXPECT_EQ(e.rfind("xgboost model 'm.json': byte " + std::to_string(cut) + " (line 1, column " +
                          std::to_string(cut) + "): malformed JSON: ",
                      0),
              0u)
        << e;
  }
  // A leaf whose value is NaN: XGBoost writes it as a bare NaN, which is read, then refused.
  json doc = json::parse(text);
  const auto& t = tree0(doc);
  std::size_t leaf = 0;
  while (t["left_children"][leaf] != -1) ++leaf;
  std::string damaged = doc.dump();
  const std::string conditions = "\"split_conditions\":[";
  std::size_t at = damaged.find(conditions) + conditions.size();
  for (std::size_t i = 0; i < leaf; ++i) at = damaged.find(',', at) + 1;
  damaged.replace(at, damaged.find_first_of(",]", at) - at, "NaN");
  EXPECT_EQ(error_of([&] { parse_xgboost_json(damaged, "m.json"); }),
            kTree0 + "split_conditions[" + std::to_string(leaf) + "]: leaf value of node " +
                std::to_string(leaf) + " is not finite");
}

TEST(XGBoostUbjsonErrors, TruncationAndDamageNameTheByte) {
  GRADSCOPE_REQUIRE_DATA(data_file("breast_cancer.csv"));
  const std::string& bytes = saved().second;
  EXPECT_EQ(detect_model_format(bytes, "m.ubj"), ModelFormat::kXGBoostUbjson);
  for (int k = 1; k < 20; ++k) {
    const std::size_t cut = bytes.size() * static_cast<std::size_t>(k) / 20;
    const std::string e = error_of([&] { parse_xgboost_ubjson(bytes.substr(0, cut), "m.ubj"); });
    EXPECT_EQ(e.rfind("xgboost model 'm.ubj': byte ", 0), 0u) << e;
    EXPECT_NE(e.find(": malformed UBJSON: "), std::string::npos) << e;
  }
  // A field of the wrong type is named by its path, as in JSON.
  json doc = json::from_ubjson(bytes);
  tree0(doc)["split_indices"][0] = 31;
  const std::vector<std::uint8_t> edited = json::to_ubjson(doc);
  EXPECT_EQ(
      error_of([&] { parse_xgboost_ubjson(std::string(edited.begin(), edited.end()), "m.ubj"); }),
      "xgboost model 'm.ubj': learner.gradient_booster.model.trees[0].split_indices[0]: "
      "feature 31 outside the model's 30 features");
  // A count of 2^62 no-data elements would loop for ever: it is refused at once.
  const std::string endless = std::string("[$Z#L", 5) + std::string("\x40\0\0\0\0\0\0\0", 8);
  EXPECT_EQ(error_of([&] { parse_xgboost_ubjson(endless, "m.ubj"); }),
            "xgboost model 'm.ubj': malformed: a container of 4611686018427387904 elements in "
            "13 bytes");
}

}  // namespace
}  // namespace gradscope::test
