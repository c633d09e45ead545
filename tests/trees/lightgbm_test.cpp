// The LightGBM readers against LightGBM itself: each fixture model (text and dump_model JSON)
// evaluated by gradscope must give, for every fixture row, the raw scores and probabilities
// LightGBM computed (the fixtures: docs/architecture.md), and land in the leaves LightGBM
// reported. Small models whose expected outputs follow by hand from their leaf values check
// missing values and category sets that the fixture rows never exercise.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gradscope/trees/read_model.h"
#include "tree_test_util.h"

namespace gradscope::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Rows of a fixture table without their first `skip` columns (a label).
std::vector<std::vector<double>> features(const std::string& name, std::size_t skip = 0) {
  auto rows = read_table(fixture(name));
  for (auto& r : rows) r.erase(r.begin(), r.begin() + static_cast<std::ptrdiff_t>(skip));
  return rows;
}

// Checks every row's raw scores (or transformed scores) against the library's table.
void expect_predictions(const TreeEnsemble& m, const std::vector<std::vector<double>>& rows,
                        const std::vector<std::vector<double>>& expected, bool transformed) {
  ASSERT_EQ(rows.size(), expected.size());
  int mismatches = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    ASSERT_EQ(rows[r].size(), static_cast<std::size_t>(m.num_features)) << "row " << r;
    std::vector<double> ours = predict_raw(m, rows[r].data());
    if (transformed) ours = transform_scores(m, ours);
    ASSERT_EQ(ours.size(), expected[r].size()) << "row " << r;
    for (std::size_t c = 0; c < ours.size(); ++c)
      if (!close(ours[c], expected[r][c]) && ++mismatches <= 5)
        ADD_FAILURE() << "row " << r << " output " << c << ": gradscope " << ours[c]
                      << ", LightGBM " << expected[r][c];
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(LightGBMText, MulticlassRawScoresAndProbabilitiesMatchLightGBM) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/lgmulticlass.model"));
  const TreeEnsemble m = read_tree_model(fixture("lightgbm/lgmulticlass.model"));
  EXPECT_EQ(m.dialect, TreeDialect::kLightGBM);
  EXPECT_EQ(m.num_outputs, 5);
  EXPECT_EQ(m.rounds, 10);
  EXPECT_EQ(m.num_features, 28);
  EXPECT_EQ(m.link, TreeLink::kSoftmax);
  const auto rows = features("lightgbm/multiclass_test.tsv", 1);  // first column: the label
  ASSERT_EQ(rows.size(), 500u);
  expect_predictions(m, rows, read_table(fixture("lightgbm/lgmulticlass_true_raw_predictions.txt")),
                     false);
  expect_predictions(m, rows, read_table(fixture("lightgbm/lgmulticlass_true_predictions.txt")),
                     true);
}

TEST(LightGBMText, CategoricalSplitsOfKddCup99MatchLightGBM) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/lg_kddcup99.model"));
  const TreeEnsemble m = read_tree_model(fixture("lightgbm/lg_kddcup99.model"));
  EXPECT_EQ(m.num_outputs, 13);
  EXPECT_EQ(m.rounds, 10);
  const auto rows = features("lightgbm/kddcup99_test.tsv");
  const auto expected = read_table(fixture("lightgbm/lg_kddcup99_true_predictions.txt"));
  expect_predictions(m, rows, expected, false);  // the fixture holds raw scores

  // The rows must depend on the category sets, or the check above proves nothing about them:
  // with every set emptied, some prediction changes.
  TreeEnsemble no_sets = m;
  std::size_t categorical = 0;
  for (Tree& t : no_sets.trees)
    for (TreeNode& n : t.nodes)
      if (n.categorical) {
        n.categories_end = n.categories_begin;
        ++categorical;
      }
  EXPECT_GT(categorical, 100u);
  std::size_t changed = 0;
  for (const auto& row : rows)
    if (predict_raw(no_sets, row.data()) != predict_raw(m, row.data())) ++changed;
  EXPECT_GT(changed, rows.size() / 10);
}

TEST(LightGBMText, DartProbabilitiesMatchLightGBM) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/lg_dart_breast_cancer.model"));
  const TreeEnsemble m = read_tree_model(fixture("lightgbm/lg_dart_breast_cancer.model"));
  EXPECT_EQ(m.booster, "dart");
  EXPECT_EQ(m.link, TreeLink::kSigmoid);
  EXPECT_EQ(m.rounds, 10);
  expect_predictions(m, features("lightgbm/breast_cancer_test.tsv"),
                     read_table(fixture("lightgbm/lg_dart_breast_cancer_true_predictions.txt")),
                     true);
}

TEST(LightGBMJson, DartDumpMatchesLightGBMAndTheTextModel) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/lg_dart_breast_cancer.json"));
  const TreeEnsemble json = read_tree_model(fixture("lightgbm/lg_dart_breast_cancer.json"));
  const TreeEnsemble text = read_tree_model(fixture("lightgbm/lg_dart_breast_cancer.model"));
  // This (v2) dump names no objective, so its scores stay raw; LightGBM's probabilities are
  // their logistic.
  EXPECT_EQ(json.link, TreeLink::kIdentity);
  ASSERT_EQ(json.trees.size(), text.trees.size());
  const auto rows = features("lightgbm/breast_cancer_test.tsv");
  const auto expected = read_table(fixture("lightgbm/lg_dart_breast_cancer_true_predictions.txt"));
  ASSERT_EQ(rows.size(), expected.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const double raw = predict_raw(json, rows[r].data())[0];
    EXPECT_TRUE(close(1 / (1 + std::exp(-raw)), expected[r][0])) << "row " << r;
    EXPECT_EQ(raw, predict_raw(text, rows[r].data())[0]) << "row " << r;
    for (std::size_t t = 0; t < json.trees.size(); ++t)
      EXPECT_EQ(json.trees[t]
                    .nodes[static_cast<std::size_t>(leaf_of(json, json.trees[t], rows[r].data()))]
                    .leaf_index,
                text.trees[t]
                    .nodes[static_cast<std::size_t>(leaf_of(text, text.trees[t], rows[r].data()))]
                    .leaf_index)
          << "row " << r << " tree " << t;
  }
}

TEST(LightGBMText, EveryRowLandsInTheLeafLightGBMReported) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/lg_breast_cancer.txt"));
  const TreeEnsemble m = read_tree_model(fixture("lightgbm/lg_breast_cancer.txt"));
  const auto rows = features("lightgbm/lg_breast_cancer_data.txt");
  const auto leaves = read_table(fixture("lightgbm/lg_breast_cancer_data_pred_leaves.txt"));
  ASSERT_EQ(rows.size(), leaves.size());
  ASSERT_EQ(m.trees.size(), 39u);
  std::size_t checked = 0;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    ASSERT_EQ(leaves[r].size(), m.trees.size());
    for (std::size_t t = 0; t < m.trees.size(); ++t) {
      const Tree& tree = m.trees[t];
      const int32_t node = leaf_of(m, tree, rows[r].data());
      EXPECT_EQ(tree.nodes[static_cast<std::size_t>(node)].leaf_index, leaves[r][t])
          << "row " << r << " tree " << t;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 57u * 39u);
}

// model_simple.txt: tree 0 and 1 split feature 1 on the category set {100} (NaN missing type,
// so NaN goes right), then feature 0 at 340.5 (missing type None: NaN counts as 0). Leaf k of
// tree t holds leaf_value[k]; the raw score is the sum over both trees.
TEST(LightGBMText, SimpleModelFollowsCategoryAndMissingRules) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/model_simple.txt"));
  const TreeEnsemble m = read_tree_model(fixture("lightgbm/model_simple.txt"));
  ASSERT_EQ(m.trees.size(), 2u);
  const double leaf0 = 0.56697267424823339 + 0.12883103567558912;    // category 100
  const double leaf1 = 0.3584987837673016 + -0.063872842243335157;   // x0 <= 340.5
  const double leaf2 = 0.41213915936587919 + -0.016484332942214807;  // x0 > 340.5
  const std::vector<std::pair<std::vector<double>, double>> cases = {
      {{0, 0}, leaf1},     {{1000, 0}, leaf2},    {{800, 0}, leaf2},     {{800, 100}, leaf0},
      {{0, 100}, leaf0},   {{1000, kNaN}, leaf2}, {{kNaN, kNaN}, leaf1}, {{340.5, 7}, leaf1},
      {{0, 100.9}, leaf0}, {{0, -100}, leaf1}};
  for (const auto& [row, raw] : cases) {
    EXPECT_DOUBLE_EQ(predict_raw(m, row.data())[0], raw) << row[0] << ", " << row[1];
    EXPECT_DOUBLE_EQ(transform_scores(m, {raw})[0], 1 / (1 + std::exp(-raw)));
  }
  // The first round alone: tree 0's leaves.
  EXPECT_DOUBLE_EQ(predict_raw(m, cases[3].first.data(), 1)[0], 0.56697267424823339);
}

using Cases = std::vector<std::pair<std::vector<double>, double>>;

// Each case's row has the raw score given.
void expect_raw(const TreeEnsemble& m, const Cases& cases) {
  for (const auto& [row, v] : cases)
    EXPECT_EQ(predict_raw(m, row.data())[0], v) << row[0] << ", " << row[1];
}

// A bare tree block from leaves' testdata (tree_<n>leaves.txt) inside a minimal model header.
TreeEnsemble bare_tree(const std::string& name) {
  const std::string text =
      "tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\n"
      "max_feature_idx=1\nobjective=regression\n\n" +
      read_text(fixture("lightgbm/" + name)) + "\nend of trees\n";
  return parse_tree_model(text, name);
}

TEST(LightGBMText, BareTreesFromOneToThreeLeaves) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/tree_3leaves.txt"));
  const TreeEnsemble one = bare_tree("tree_1leaf.txt");
  for (const double x : {0.0, 10.0, -10.0, kNaN}) {
    const double row[2] = {x, x};
    EXPECT_EQ(predict_raw(one, row)[0], 0.123);
  }
  // threshold 5, decision_type 2: default left, missing type None (NaN counts as 0).
  const TreeEnsemble two = bare_tree("tree_2leaves.txt");
  const std::vector<std::pair<double, double>> two_cases = {
      {0, 0.43}, {5, 0.43}, {5.1, 0.59}, {kNaN, 0.43}, {-3, 0.43}};
  for (const auto& [x, v] : two_cases) {
    const double row[2] = {x, 0};
    EXPECT_EQ(predict_raw(two, row)[0], v) << x;
  }
  EXPECT_EQ(two.trees[0].nodes[1].cover, 300);  // leaf_count of leaf 0
  // Node 0: feature 1 in {100} (decision_type 9: categorical, NaN missing) goes to leaf 0;
  // node 1: feature 0 <= 756.
  const TreeEnsemble three = bare_tree("tree_3leaves.txt");
  expect_raw(three, {{{0, 0}, 0.35},
                     {{1000, 0}, 0.38},
                     {{kNaN, 0}, 0.35},
                     {{kNaN, 10}, 0.35},
                     {{kNaN, 100}, 0.54},
                     {{1000, kNaN}, 0.38}});
}

TEST(LightGBMJson, OneTreeWithACategorySet) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/lg_1tree.json"));
  const TreeEnsemble m = read_tree_model(fixture("lightgbm/lg_1tree.json"));
  ASSERT_EQ(m.num_features, 2);
  // x0 <= 0.14 then x1 in {1, 10, 100} -> 0.4703, else 0.4242; x0 > 0.14 -> 1.1111.
  expect_raw(m, {{{0, 0}, 0.4242},
                 {{0, 11}, 0.4242},
                 {{0.13, 11}, 0.4242},
                 {{0, 1}, 0.4703},
                 {{0, 10}, 0.4703},
                 {{0, 100}, 0.4703},
                 {{0.15, 0}, 1.1111},
                 {{0.15, 11}, 1.1111},
                 {{0.14, 10}, 0.4703}});
}

TEST(LightGBMJson, OneLeafModelKeepsItsFeatureCount) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/lg_1tree_1leaf.json"));
  const TreeEnsemble m = read_tree_model(fixture("lightgbm/lg_1tree_1leaf.json"));
  EXPECT_EQ(m.num_features, 41);
  EXPECT_TRUE(m.feature_names.empty());  // one name for 41 features: not kept
  const std::vector<double> row(41, 0.0);
  EXPECT_EQ(predict_raw(m, row.data())[0], 0.42);
}

}  // namespace
}  // namespace gradscope::test
