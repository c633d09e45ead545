// Recipe and profile JSON: round trips, sizes recomputed (never trusted from the file), and
// every kind of bad input named by its field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "../common/compress_fixture.h"
#include "../common/error_of.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/io/compress/json.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;
using test::error_of;
using namespace compress;

std::vector<NodeProfile> profiles() {
  std::vector<NodeProfile> p = test::linear_chain(3, 4, 2);
  p[0].max_abs = {1, 2, 3, 4};
  p[0].weight_sq = {1, 1, 1, 1};
  p[0].act_sq = {0.5, 0.25, 0, 1};
  p[0].out_grad_sq = {1, 1, 1, 1};
  p[0].zero_frac = {0, 0, 1, 0};
  p[1].max_abs = {1, 1};
  p[1].weight_sq = {2, 2};
  for (NodeProfile& n : p) n.batch = 8;
  return p;
}

TEST(CompressJson, RecipeRoundTripsAndSizesAreRecomputed) {
  Recipe r = uniform_recipe(profiles(), Precision::kInt4);
  r.nodes[0].pruned_units = {2};
  recompute_bytes(r);
  const Recipe back = parse_recipe_json(render_recipe_json(r), "r.json");
  EXPECT_EQ(back.method, "uniform-int4");
  ASSERT_EQ(back.nodes.size(), 2u);
  EXPECT_EQ(back.nodes[0].pruned_units, std::vector<int64_t>{2});
  EXPECT_EQ(back.nodes[1].precision, Precision::kInt4);
  EXPECT_EQ(back.bytes, r.bytes);
  EXPECT_EQ(back.nodes[1].bytes, r.nodes[1].bytes);
  // A size edited in the file does not survive: it is computed from the decisions.
  std::string text = render_recipe_json(r);
  text.replace(text.find("\"bytes\": " + std::to_string(r.bytes)), 9 + std::to_string(r.bytes).size(), "\"bytes\": 1");
  EXPECT_EQ(parse_recipe_json(text, "r.json").bytes, r.bytes);
}

TEST(CompressJson, BadRecipesNameTheField) {
  const std::string good = render_recipe_json(uniform_recipe(profiles(), Precision::kInt8));
  auto edit = [&](const std::string& from, const std::string& to) {
    std::string t = good;
    const auto at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    return error_of([&] { parse_recipe_json(t, "r.json"); });
  };
  EXPECT_EQ(error_of([&] { parse_recipe_json(good, "r.json"); }), "no error");
  EXPECT_THAT(edit("\"int8\"", "\"int5\""), HasSubstr("r.json: gradscope_compression_recipe.nodes[0].precision"));
  EXPECT_THAT(edit("\"int8\"", "\"int5\""), HasSubstr("unknown precision 'int5'"));
  EXPECT_THAT(edit("\"pruned_units\": []", "\"pruned_units\": [7]"), HasSubstr("unit 7 is not in 0..3"));
  EXPECT_THAT(edit("\"pruned_units\": []", "\"pruned_units\": [0, 1, 2, 3]"), HasSubstr("prunes every unit"));
  EXPECT_THAT(edit("\"pruned_units\": []", "\"pruned_units\": [-1]"), HasSubstr("pruned_units[0]"));
  EXPECT_THAT(edit("\"version\": 1", "\"version\": 2"), HasSubstr("version is not 1"));
  // A node decided twice would be applied twice and its bytes counted twice; a unit listed
  // twice would count as two pruned units.
  EXPECT_THAT(edit("\"node\": \"fc2\"", "\"node\": \"fc1\""),
              HasSubstr("nodes[1].node: 'fc1' is also nodes[0] (a node is decided once)"));
  EXPECT_THAT(edit("\"pruned_units\": []", "\"pruned_units\": [1, 1]"), HasSubstr("unit 1 is listed twice"));
  EXPECT_THAT(edit("\"bias\": 4", "\"bias\": 4.5"), HasSubstr("nodes[0].bias"));
  EXPECT_THAT(error_of([] { parse_recipe_json("{", "r.json"); }), HasSubstr("r.json: not JSON (parse error at line 1"));
  EXPECT_THAT(error_of([] { parse_recipe_json("{", "r.json"); }), ::testing::Not(HasSubstr("json.exception")));
  EXPECT_THAT(error_of([] { parse_recipe_json("{}", "r.json"); }), HasSubstr("gradscope_compression_recipe"));
  EXPECT_THAT(error_of([] { load_recipe("/nonexistent/r.json"); }), HasSubstr("cannot open recipe '/nonexistent/r.json'"));
}

TEST(CompressJson, ProfileRoundTripsAndIsChecked) {
  const std::vector<NodeProfile> p = profiles();
  const std::vector<NodeProfile> back = parse_compress_profile_json(render_compress_profile_json(p), "u.json");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].next, "fc2");
  EXPECT_EQ(back[0].act_sq, p[0].act_sq);
  EXPECT_EQ(back[0].zero_frac, p[0].zero_frac);
  EXPECT_EQ(back[1].weight_sq, p[1].weight_sq);
  EXPECT_EQ(back[0].batch, 8);
  std::string text = render_compress_profile_json(p);
  text.replace(text.find("\"next_fan\": 1"), 13, "\"next_fan\": 3");
  EXPECT_THAT(error_of([&] { parse_compress_profile_json(text, "u.json"); }), HasSubstr("u.json: node 'fc1'"));
  std::vector<NodeProfile> bad = p;
  bad[0].zero_frac[1] = 1.5;
  EXPECT_THAT(error_of([&] { parse_compress_profile_json(render_compress_profile_json(bad), "u.json"); }),
              HasSubstr("zero_frac[1]: is not in 0..1"));
  bad = p;
  bad[0].act_sq[1] = -1;
  EXPECT_THAT(error_of([&] { parse_compress_profile_json(render_compress_profile_json(bad), "u.json"); }),
              HasSubstr("act_sq[1]"));
  // What said "no statistics in the run" before, naming neither file nor field.
  bad = p;
  bad[0].batch = 0;
  EXPECT_EQ(error_of([&] { parse_compress_profile_json(render_compress_profile_json(bad), "u.json"); }),
            "u.json: gradscope_compression_profile.nodes[0].batch: must be at least 1 (samples per step), got 0");
  bad = p;
  bad[0].act_sq.clear();
  EXPECT_EQ(error_of([&] { parse_compress_profile_json(render_compress_profile_json(bad), "u.json"); }),
            "u.json: gradscope_compression_profile.nodes[0].act_sq: is empty while out_grad_sq is not (a channel "
            "view measures the activation first)");
  bad = p;
  bad[0].out_grad_sq.clear();  // activations without gradients: what profile_model keeps then
  EXPECT_EQ(error_of([&] { parse_compress_profile_json(render_compress_profile_json(bad), "u.json"); }), "no error");
}

TEST(CompressJson, MeasuredComparisonRoundTrips) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("gs-cmp-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(load_measured_comparison(dir.string()).has_value());
  MeasuredComparison c{"mlp on digits", 0.95, 26280, {{"dynamics", "quarter", 5992, 0.93}, {"uniform-int4", "int4", 3868, 0.9}}};
  save_measured_comparison(dir.string(), c);
  const auto back = load_measured_comparison(dir.string());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->points.size(), 2u);
  EXPECT_EQ(back->points[0].bytes, 5992);
  EXPECT_DOUBLE_EQ(back->points[1].accuracy, 0.9);
  std::ofstream(dir / "compression.json") << "{\"gradscope_compression_measured\": {\"version\": 1}}";
  EXPECT_THAT(error_of([&] { load_measured_comparison(dir.string()); }), HasSubstr("compression.json"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gradscope
