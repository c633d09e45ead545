// TreeEnsemble evaluation by each library's rules, on trees built by hand, where the expected
// leaf follows from the rule itself; and check_ensemble's refusals of trees that could not be
// evaluated safely (cycles, children and features out of range).
#include "gradscope/core/trees/model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../common/error_of.h"

namespace gradscope::test {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

TreeNode leaf(double value) {
  TreeNode n;
  n.value = value;
  return n;
}

TreeNode split(int32_t feature, double threshold, int32_t left, int32_t right) {
  TreeNode n;
  n.feature = feature;
  n.threshold = threshold;
  n.left = left;
  n.right = right;
  return n;
}

// One stump: x[0] against `threshold`, leaves -1 (left) and +1 (right).
TreeEnsemble stump(TreeDialect dialect, double threshold) {
  TreeEnsemble m;
  m.dialect = dialect;
  m.num_features = 2;
  m.rounds = 1;
  m.base_score = {0};
  Tree t;
  t.nodes = {split(0, threshold, 1, 2), leaf(-1), leaf(1)};
  m.trees.push_back(t);
  check_ensemble(m);
  return m;
}

double first(const TreeEnsemble& m, std::vector<double> row) {
  return predict_raw(m, row.data())[0];
}

TEST(TreeModel, XGBoostGoesLeftBelowTheFloatThresholdLightGBMAtOrBelowIt) {
  const TreeEnsemble x = stump(TreeDialect::kXGBoost, 0.5);
  EXPECT_EQ(first(x, {0.4, 0}), -1);
  EXPECT_EQ(first(x, {0.5, 0}), 1);  // XGBoost: left only when x < split
  const TreeEnsemble l = stump(TreeDialect::kLightGBM, 0.5);
  EXPECT_EQ(first(l, {0.5, 0}), -1);  // LightGBM: left when x <= threshold
  EXPECT_EQ(first(l, {0.5000001, 0}), 1);
  // XGBoost compares float32: 0.1 (double) and the float threshold 0.1f are equal as floats.
  const TreeEnsemble f = stump(TreeDialect::kXGBoost, static_cast<float>(0.1));
  EXPECT_EQ(first(f, {0.1, 0}), 1);
  EXPECT_EQ(first(f, {0.0999999, 0}), -1);
}

TEST(TreeModel, MissingValuesFollowTheDefaultDirection) {
  TreeEnsemble x = stump(TreeDialect::kXGBoost, 0.5);
  EXPECT_EQ(first(x, {kNaN, 0}), 1);
  x.trees[0].nodes[0].default_left = true;
  EXPECT_EQ(first(x, {kNaN, 0}), -1);

  TreeEnsemble l = stump(TreeDialect::kLightGBM, -0.5);
  TreeNode& n = l.trees[0].nodes[0];
  n.missing = MissingType::kNone;  // NaN counts as 0: 0 > -0.5 goes right
  EXPECT_EQ(first(l, {kNaN, 0}), 1);
  n.missing = MissingType::kZero;  // 0 (and NaN, as 0) take the default direction
  n.default_left = true;
  EXPECT_EQ(first(l, {0, 0}), -1);
  EXPECT_EQ(first(l, {kNaN, 0}), -1);
  EXPECT_EQ(first(l, {1e-36, 0}), -1);  // within LightGBM's kZeroThreshold (1e-35)
  EXPECT_EQ(first(l, {1e-30, 0}), 1);
  n.missing = MissingType::kNaN;  // only NaN takes the default; 0 is compared
  n.default_left = false;
  EXPECT_EQ(first(l, {kNaN, 0}), 1);
  n.default_left = true;
  EXPECT_EQ(first(l, {kNaN, 0}), -1);
  EXPECT_EQ(first(l, {0, 0}), 1);
}

TEST(TreeModel, CategorySetsSendListedCategoriesOneWay) {
  for (const TreeDialect d : {TreeDialect::kXGBoost, TreeDialect::kLightGBM}) {
    TreeEnsemble m = stump(d, 0);
    Tree& t = m.trees[0];
    t.categories = {2, 5, 40};
    t.nodes[0].categorical = true;
    t.nodes[0].categories_begin = 0;
    t.nodes[0].categories_end = 3;
    check_ensemble(m);
    // XGBoost sends listed categories right (Decision() is false for them), LightGBM left.
    const double listed = d == TreeDialect::kXGBoost ? 1 : -1;
    for (const double c : {2.0, 5.0, 40.0, 5.7}) EXPECT_EQ(first(m, {c, 0}), listed) << c;
    for (const double c : {0.0, 3.0, 41.0, -2.0, 1e12}) EXPECT_EQ(first(m, {c, 0}), -listed) << c;
  }
}

// One oblivious tree with these levels and leaf values (unchecked: some tests break it).
TreeEnsemble oblivious(int32_t features, std::vector<ObliviousSplit> levels,
                       std::vector<double> leaves) {
  TreeEnsemble m;
  m.dialect = TreeDialect::kCatBoost;
  m.num_features = features;
  m.rounds = 1;
  m.base_score = {0};
  Tree t;
  t.levels = std::move(levels);
  t.leaf_values = std::move(leaves);
  m.trees.push_back(t);
  return m;
}

// Category 0 is where the two libraries part: LightGBM casts to int (toward zero), so -0.5 is
// category 0, and sends NaN right whatever the missing type (tree.h CategoricalDecision;
// before v3 the cast of NaN gave INT_MIN on x86, < 0, right as well). XGBoost calls any
// negative value an invalid category, which goes left (categorical.h Decision, whose own
// test has -0.5 with category 0 chosen going left).
TEST(TreeModel, CategoryZeroNegativeFractionsAndNaN) {
  for (const TreeDialect d : {TreeDialect::kXGBoost, TreeDialect::kLightGBM}) {
    TreeEnsemble m = stump(d, 0);
    Tree& t = m.trees[0];
    t.categories = {0, 7};
    t.nodes[0].categorical = true;
    t.nodes[0].categories_end = 2;
    for (const MissingType missing : {MissingType::kNone, MissingType::kZero, MissingType::kNaN}) {
      t.nodes[0].missing = missing;
      for (const bool default_left : {false, true}) {
        t.nodes[0].default_left = default_left;
        if (d == TreeDialect::kLightGBM) {
          EXPECT_EQ(first(m, {-0.5, 0}), -1);  // category 0: listed, left
          EXPECT_EQ(first(m, {-1.0, 0}), 1);   // -1: negative, right
          EXPECT_EQ(first(m, {0.0, 0}), -1);
          EXPECT_EQ(first(m, {kNaN, 0}), 1);  // NaN: right, never category 0
        } else {
          EXPECT_EQ(first(m, {-0.5, 0}), -1);                     // negative: invalid, left
          EXPECT_EQ(first(m, {0.0, 0}), 1);                       // category 0: listed, right
          EXPECT_EQ(first(m, {kNaN, 0}), default_left ? -1 : 1);  // missing: the default
        }
      }
    }
  }
}

TEST(TreeModel, ObliviousLeafIndexHasLevelLAsBitL) {
  // leaf = bit0 + 2 bit1
  TreeEnsemble m = oblivious(2, {{0, 0.5f, false}, {1, 0.5f, true}}, {10, 20, 30, 40});
  m.base_score = {0.5};
  m.scale = 2;
  check_ensemble(m);
  EXPECT_EQ(leaf_of(m, m.trees[0], std::vector<double>{1, 0}.data()), 1);
  EXPECT_EQ(leaf_of(m, m.trees[0], std::vector<double>{0, 1}.data()), 2);
  EXPECT_EQ(leaf_of(m, m.trees[0], std::vector<double>{0.5, kNaN}.data()), 2);  // NaN AsTrue
  EXPECT_EQ(leaf_of(m, m.trees[0], std::vector<double>{kNaN, 0}.data()), 0);    // NaN AsIs
  EXPECT_EQ(first(m, {1, 1}), 2 * 40 + 0.5);  // raw = scale * sum + bias
}

TEST(TreeModel, RoundsDartWeightsAveragingAndBaseScores) {
  TreeEnsemble m = stump(TreeDialect::kLightGBM, 0.5);
  m.trees.push_back(m.trees[0]);
  m.trees[1].round = 1;
  m.trees[1].nodes[2].value = 3;
  m.rounds = 2;
  m.base_score = {0.25};
  check_ensemble(m);
  EXPECT_EQ(first(m, {1, 0}), 1 + 3 + 0.25);
  EXPECT_EQ(predict_raw(m, std::vector<double>{1, 0}.data(), 1)[0], 1 + 0.25);
  EXPECT_EQ(predict_raw(m, std::vector<double>{1, 0}.data(), 0)[0], 0.25);
  m.average_output = true;  // LightGBM random forests: the mean of the trees
  EXPECT_EQ(first(m, {1, 0}), (1 + 3) / 2.0 + 0.25);
  m.average_output = false;
  m.trees[1].weight = 0.5;  // DART
  EXPECT_EQ(tree_output(m, m.trees[1], std::vector<double>{1, 0}.data()), 1.5);
  EXPECT_EQ(first(m, {1, 0}), 1 + 1.5 + 0.25);
}

TEST(TreeModel, LinksTurnRawScoresIntoPredictions) {
  TreeEnsemble m = stump(TreeDialect::kLightGBM, 0);
  m.link = TreeLink::kSigmoid;
  m.sigmoid_scale = 2;
  EXPECT_DOUBLE_EQ(transform_scores(m, {0.3})[0], 1 / (1 + std::exp(-0.6)));
  m.link = TreeLink::kExp;
  EXPECT_DOUBLE_EQ(transform_scores(m, {0.3})[0], std::exp(0.3));
  m.link = TreeLink::kLog1pExp;
  EXPECT_DOUBLE_EQ(transform_scores(m, {0.3})[0], std::log1p(std::exp(0.3)));
  m.link = TreeLink::kSoftmax;
  const auto p = transform_scores(m, {1, 2, 3});
  const double z = std::exp(1) + std::exp(2) + std::exp(3);
  EXPECT_NEAR(p[0], std::exp(1) / z, 1e-15);
  EXPECT_NEAR(p[2], std::exp(3) / z, 1e-15);
  EXPECT_DOUBLE_EQ(transform_scores(m, {1000, 0})[0], 1);  // no overflow
  m.link = TreeLink::kSoftmaxArgmax;
  EXPECT_EQ(transform_scores(m, {1, 5, 3}), std::vector<double>{1});
  m.link = TreeLink::kHinge;
  EXPECT_EQ(transform_scores(m, {-0.1, 0, 0.2}), (std::vector<double>{0, 0, 1}));
  m.dialect = TreeDialect::kXGBoost;  // float32, with the exponent capped as XGBoost does
  m.link = TreeLink::kSigmoid;
  EXPECT_EQ(transform_scores(m, {-200})[0], static_cast<double>(1.0f / (std::exp(88.7f) + 1.0f)));
}

// A tree of five nodes: 0 -> (1, 2), 1 -> (3, 4).
TreeEnsemble five_nodes() {
  TreeEnsemble m = stump(TreeDialect::kXGBoost, 0.5);
  Tree& t = m.trees[0];
  t.nodes = {split(0, 0.5, 1, 2), split(1, 0.5, 3, 4), leaf(1), leaf(2), leaf(3)};
  check_ensemble(m);
  return m;
}

TEST(TreeModelCheck, RefusesCyclesAndSharedChildren) {
  TreeEnsemble m = five_nodes();
  m.trees[0].nodes[1].left = 0;  // back to the root: an endless walk
  EXPECT_EQ(error_of([&] { check_ensemble(m); }),
            "tree 0: node 1: child 0 is reached twice (not a tree)");
  m = five_nodes();
  m.trees[0].nodes[1].right = 2;  // two parents: node 4 is left unreachable
  EXPECT_EQ(error_of([&] { check_ensemble(m); }),
            "tree 0: node 1: child 2 is reached twice (not a tree)");
  m = five_nodes();
  m.trees[0].nodes[1].right = m.trees[0].nodes[1].left = 3;
  EXPECT_EQ(error_of([&] { check_ensemble(m); }),
            "tree 0: node 1: child 3 is reached twice (not a tree)");
}

TEST(TreeModelCheck, RefusesWhatIsOutOfRange) {
  TreeEnsemble m = five_nodes();
  m.trees[0].nodes[1].right = 9;
  EXPECT_EQ(error_of([&] { check_ensemble(m); }),
            "tree 0: node 1: child 9 outside the tree's 5 nodes");
  m = five_nodes();
  m.trees[0].nodes[1].feature = 2;
  EXPECT_EQ(error_of([&] { check_ensemble(m); }),
            "tree 0: node 1: split feature 2 outside the model's 2 features");
  m = five_nodes();
  m.trees[0].nodes.push_back(leaf(7));
  EXPECT_EQ(error_of([&] { check_ensemble(m); }), "tree 0: 1 nodes unreachable from the root");
  m = five_nodes();
  m.trees[0].nodes[0].categorical = true;
  m.trees[0].nodes[0].categories_end = 4;
  EXPECT_EQ(error_of([&] { check_ensemble(m); }),
            "tree 0: node 0: category range outside the tree's category list");
  m = five_nodes();
  m.trees[0].output = 1;
  EXPECT_EQ(error_of([&] { check_ensemble(m); }), "tree 0: output 1 outside the model's 1");
  m = five_nodes();
  m.trees[0].nodes.clear();
  EXPECT_EQ(error_of([&] { check_ensemble(m); }), "tree 0: no nodes");
  m = five_nodes();
  m.rounds = 2;
  EXPECT_EQ(error_of([&] { check_ensemble(m); }), "model: 1 trees do not make 2 equal rounds");
  m = five_nodes();
  m.base_score = {0, 0};
  EXPECT_EQ(error_of([&] { check_ensemble(m); }), "model: 2 base scores for 1 outputs");
}

TEST(TreeModelCheck, RefusesObliviousTreesOfTheWrongShape) {
  TreeEnsemble m = oblivious(1, {{0, 0.5f, false}, {0, 1.5f, false}}, {1, 2, 3});
  EXPECT_EQ(error_of([&] { check_ensemble(m); }), "tree 0: 3 leaf values for depth 2 (needs 4)");
  m.trees[0].leaf_values.push_back(4);
  m.trees[0].levels[1].feature = 1;
  EXPECT_EQ(error_of([&] { check_ensemble(m); }),
            "tree 0: level 1: split feature 1 outside the model's 1 features");
  m.trees[0].levels[1].feature = 0;
  EXPECT_EQ(error_of([&] { check_ensemble(m); }), "no error");
  m.dialect = TreeDialect::kLightGBM;
  EXPECT_EQ(error_of([&] { check_ensemble(m); }),
            "tree 0: an oblivious tree in a non-CatBoost model");
}

}  // namespace
}  // namespace gradscope::test
