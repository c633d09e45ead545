// What analyze_tree_dynamics measures, each number against a naive reference: per-prefix
// predictions for the losses (the incremental sums must equal predict_raw of every prefix),
// per-row round outputs for contributions and velocity, the trees' own nodes for leaves,
// depth, gains and features.
#include "gradscope/core/trees/dynamics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "../common/error_of.h"
#include "gradscope/core/audit/rules.h"
#include "tree_builders.h"

namespace gradscope {
namespace {

using test::random_data;
using test::random_tree;
using test::stump;
using ::testing::HasSubstr;

// A random model: `rounds` rounds of `per_output` trees for each of `outputs` outputs.
TreeEnsemble random_model(uint64_t seed, int32_t rounds, int32_t outputs, int32_t per_output,
                          TreeLink link, const char* objective, TreeDialect dialect) {
  std::mt19937_64 gen(seed);
  std::vector<Tree> trees;
  for (int32_t r = 0; r < rounds; ++r)
    for (int32_t c = 0; c < outputs; ++c)
      for (int32_t p = 0; p < per_output; ++p) trees.push_back(random_tree(gen, r, c, 4, 3));
  TreeEnsemble m = test::ensemble(trees, 4, outputs, link, objective, dialect);
  for (std::size_t c = 0; c < m.base_score.size(); ++c)
    m.base_score[c] = 0.1 * static_cast<double>(c) - 0.2;
  return m;
}

struct Case {
  const char* name;
  TreeLink link;
  const char* objective;
  TreeDialect dialect;
  int32_t outputs, per_output;
  bool average;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class TreePrefixLoss : public ::testing::TestWithParam<Case> {};

TEST_P(TreePrefixLoss, EveryRoundsLossEqualsThePredictionOfThatPrefix) {
  const Case c = GetParam();
  TreeEnsemble m = random_model(11, 12, c.outputs, c.per_output, c.link, c.objective, c.dialect);
  m.average_output = c.average;
  if (c.average) m.scale = 0.5;
  std::mt19937_64 gen(3);
  auto label = [&](const double* x) {
    if (c.outputs > 1) return static_cast<double>(x[0] > 0) + static_cast<double>(x[1] > 0.5);
    return tree_loss_of(m) == TreeLoss::kRmse ? 2 * x[0] - x[3]
                                              : static_cast<double>(x[0] + x[1] > 0);
  };
  const TreeData train = random_data(gen, 150, 4, label), valid = random_data(gen, 70, 4, label);
  const TreeDynamicsReport r = analyze_tree_dynamics(m, {&train, &valid});
  ASSERT_NE(r.loss, TreeLoss::kNone) << c.name;
  EXPECT_EQ(r.base_train_loss, test::prefix_loss(m, train, 0));
  EXPECT_EQ(r.base_valid_loss, test::prefix_loss(m, valid, 0));
  ASSERT_EQ(r.per_round.size(), 12u);
  for (int32_t k = 1; k <= 12; ++k) {
    // Same sums in the same order and precision: equal, not merely close.
    EXPECT_EQ(r.per_round[static_cast<std::size_t>(k - 1)].train_loss,
              test::prefix_loss(m, train, k))
        << c.name << " " << k;
    EXPECT_EQ(r.per_round[static_cast<std::size_t>(k - 1)].valid_loss,
              test::prefix_loss(m, valid, k))
        << c.name << " " << k;
    EXPECT_EQ(r.per_round[static_cast<std::size_t>(k - 1)].train_row_loss.count, 150);
  }
  // The best validation round is the first minimum of that curve.
  int32_t best = 0;
  for (int32_t k = 1; k <= 12; ++k)
    if (test::prefix_loss(m, valid, k) < test::prefix_loss(m, valid, best)) best = k;
  EXPECT_EQ(r.best_valid_rounds, best);
}

INSTANTIATE_TEST_SUITE_P(
    Dialects, TreePrefixLoss,
    ::testing::Values(Case{"xgboost logloss", TreeLink::kSigmoid, "binary:logistic",
                           TreeDialect::kXGBoost, 1, 1, false},
                      Case{"xgboost softmax", TreeLink::kSoftmax, "multi:softprob",
                           TreeDialect::kXGBoost, 3, 1, false},
                      Case{"xgboost forest rmse", TreeLink::kIdentity, "reg:squarederror",
                           TreeDialect::kXGBoost, 1, 3, false},
                      Case{"lightgbm binary", TreeLink::kSigmoid, "binary sigmoid:1",
                           TreeDialect::kLightGBM, 1, 1, false},
                      Case{"lightgbm rf averaged", TreeLink::kIdentity, "regression",
                           TreeDialect::kLightGBM, 1, 1, true}),
    [](const auto& info) {
      std::string n = info.param.name;
      std::replace(n.begin(), n.end(), ' ', '_');
      return n;
    });

// The round's output per row and output, by walking every tree of the round.
std::vector<double> round_outputs(const TreeEnsemble& m, const TreeData& d, int32_t round,
                                  int32_t output) {
  std::vector<double> out(d.rows, 0.0);
  for (const Tree& t : m.trees)
    if (t.round == round && t.output == output)
      for (std::size_t i = 0; i < d.rows; ++i) out[i] += tree_output(m, t, d.row(i));
  return out;
}

// W1 of two equal-sized samples: the mean distance between their sorted values.
double sorted_w1(std::vector<double> a, std::vector<double> b) {
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  double s = 0;
  for (std::size_t i = 0; i < a.size(); ++i) s += std::fabs(a[i] - b[i]);
  return s / static_cast<double>(a.size());
}

TEST(TreeDynamics, ContributionAndVelocityMatchTheRowsOutputs) {
  // One tree per output (leaf atoms) and three per output (per-row atoms).
  for (const int32_t per_output : {1, 3}) {
    const TreeEnsemble m = random_model(5, 6, 2, per_output, TreeLink::kSoftmax, "multi:softprob",
                                        TreeDialect::kXGBoost);
    std::mt19937_64 gen(9);
    const TreeData d = random_data(gen, 300, 4, [](const double*) { return 0.0; });
    const TreeDynamicsReport r = analyze_tree_dynamics(m, {&d});
    for (int32_t round = 0; round < 6; ++round) {
      const RoundDynamics& rd = r.per_round[static_cast<std::size_t>(round)];
      double sum_abs = 0, max_abs = 0, w1 = 0;
      for (int32_t c = 0; c < 2; ++c) {
        const std::vector<double> o = round_outputs(m, d, round, c);
        for (double v : o) {
          sum_abs += std::fabs(v);
          max_abs = std::max(max_abs, std::fabs(v));
        }
        if (round > 0) w1 += sorted_w1(o, round_outputs(m, d, round - 1, c));
        EXPECT_NEAR(
            rd.outputs[static_cast<std::size_t>(c)].mean(),
            [&] {
              double s = 0;
              for (double v : o) s += v;
              return s / 300;
            }(),
            1e-12);
      }
      EXPECT_NEAR(rd.contribution, sum_abs / 600, 1e-12) << per_output << " " << round;
      EXPECT_DOUBLE_EQ(rd.contribution_max, max_abs);
      if (round == 0)
        EXPECT_TRUE(std::isnan(rd.velocity));
      else
        EXPECT_NEAR(rd.velocity, w1 / 2, 1e-12) << per_output << " " << round;
    }
  }
}

TEST(TreeDynamics, ModelMeasuresComeFromTheTreesNodes) {
  std::mt19937_64 gen(2);
  const Tree deep = random_tree(gen, 1, 0, 4, 3);
  const TreeEnsemble m = test::ensemble({stump(0, 2, 0.5, -1, 2, 4.0, 0, 10), deep}, 4);
  const TreeDynamicsReport r = analyze_tree_dynamics(m);
  ASSERT_EQ(r.per_round.size(), 2u);
  const RoundDynamics& a = r.per_round[0];
  EXPECT_EQ(a.trees, 1);
  EXPECT_EQ(a.leaves, 2);
  EXPECT_EQ(a.max_depth, 1);
  EXPECT_DOUBLE_EQ(a.gain, 4.0);
  EXPECT_DOUBLE_EQ(a.cover, 10.0);
  EXPECT_DOUBLE_EQ(a.leaf_mean_abs, 1.5);
  EXPECT_DOUBLE_EQ(a.leaf_max_abs, 2.0);
  ASSERT_EQ(a.features.size(), 1u);
  EXPECT_EQ(a.features[0].feature, 2);
  EXPECT_EQ(a.features[0].splits, 1);
  EXPECT_TRUE(std::isnan(a.contribution));  // no data

  const RoundDynamics& b = r.per_round[1];
  double gain = 0, leaf_abs = 0;
  int leaves = 0;
  std::vector<int64_t> splits(4, 0);
  for (const TreeNode& n : deep.nodes) {
    if (n.is_leaf()) {
      ++leaves;
      leaf_abs += std::fabs(static_cast<float>(n.value));
    } else {
      gain += n.gain;
      ++splits[static_cast<std::size_t>(n.feature)];
    }
  }
  EXPECT_EQ(b.leaves, leaves);
  EXPECT_EQ(b.max_depth, 3);
  EXPECT_NEAR(b.gain, gain, 1e-12);
  EXPECT_NEAR(b.leaf_mean_abs, leaf_abs / leaves, 1e-12);
  EXPECT_DOUBLE_EQ(b.cover, deep.nodes[0].cover);
  for (const FeatureSplits& f : b.features)
    EXPECT_EQ(f.splits, splits[static_cast<std::size_t>(f.feature)]);
  EXPECT_TRUE(r.has_gain);
  EXPECT_TRUE(r.has_cover);
}

TEST(TreeDynamics, ObliviousTreesHaveCountsAndLeafWeightsButNoGain) {
  Tree t;
  t.levels = {{0, 0.5f, false}, {1, -0.25f, true}};
  t.leaf_values = {1, -1, 2, -2};
  t.leaf_weights = {3, 4, 5, 6};
  TreeEnsemble m;
  m.dialect = TreeDialect::kCatBoost;
  m.objective = "RMSE";
  m.num_features = 2;
  m.base_score = {0};
  m.rounds = 1;
  m.booster = "oblivious";
  m.trees = {t};
  check_ensemble(m);
  const TreeDynamicsReport r = analyze_tree_dynamics(m);
  EXPECT_FALSE(r.has_gain);
  EXPECT_TRUE(r.has_cover);
  EXPECT_DOUBLE_EQ(r.per_round[0].cover, 18.0);
  EXPECT_EQ(r.per_round[0].max_depth, 2);
  EXPECT_EQ(r.per_round[0].leaves, 4);
  EXPECT_TRUE(std::isnan(r.per_round[0].gain));
  ASSERT_EQ(r.features.size(), 2u);
  EXPECT_DOUBLE_EQ(r.features[0].share, 0.5);  // one split (level) each, by count
}

TEST(TreeDynamics, WindowsPartitionTheRoundsAndMeasureConcentrationAndDrift) {
  // 23 rounds: automatic windows of max(5, ceil(23 / 20)) = 5 rounds, so 5 windows of 4-5.
  std::vector<Tree> trees;
  for (int32_t r = 0; r < 23; ++r)
    trees.push_back(stump(r, r < 9 ? (r < 2 ? 1 : 0) : 3, 0, -1, 1, 1.0));
  const TreeDynamicsReport rep = analyze_tree_dynamics(test::ensemble(trees, 4));
  EXPECT_EQ(rep.window, 5);
  ASSERT_EQ(rep.windows.size(), 5u);
  const int32_t bounds[][2] = {{0, 3}, {4, 8}, {9, 12}, {13, 17}, {18, 22}};
  for (std::size_t w = 0; w < 5; ++w) {
    EXPECT_EQ(rep.windows[w].first_round, bounds[w][0]);
    EXPECT_EQ(rep.windows[w].last_round, bounds[w][1]);
  }
  // Window 0: f1 twice, f0 twice -> shares 1/2, 1/2.
  EXPECT_DOUBLE_EQ(rep.windows[0].hhi, 0.5);
  EXPECT_EQ(rep.windows[0].top_feature, 0);  // a tie keeps the lower feature
  EXPECT_TRUE(std::isnan(rep.windows[0].drift));
  // Window 1: all f0: HHI 1; half the gain moved (f1's half went to f0).
  EXPECT_DOUBLE_EQ(rep.windows[1].hhi, 1.0);
  EXPECT_DOUBLE_EQ(rep.windows[1].drift, 0.5);
  EXPECT_DOUBLE_EQ(rep.windows[2].drift, 1.0);  // all f3 now
  EXPECT_DOUBLE_EQ(rep.windows[3].drift, 0.0);
  EXPECT_DOUBLE_EQ(rep.windows[4].top_share, 1.0);
  // Whole model: f3 14 of 23 splits (gain 1 each).
  ASSERT_EQ(rep.features.size(), 3u);
  EXPECT_EQ(rep.features[0].feature, 3);
  EXPECT_DOUBLE_EQ(rep.features[0].share, 14.0 / 23);
  EXPECT_EQ(rep.features[0].first_round, 9);

  TreeThresholds t;
  t.window = 10;  // 23 rounds in 3 windows: 7, 8, 8
  const TreeDynamicsReport ten = analyze_tree_dynamics(test::ensemble(trees, 4), {}, t);
  ASSERT_EQ(ten.windows.size(), 3u);
  EXPECT_EQ(ten.windows[1].first_round, 7);
  EXPECT_EQ(ten.windows[2].first_round, 15);
}

TEST(TreeDynamics, RecordsCarryEachRoundsStatsUnderTreeSites) {
  std::vector<Tree> trees;
  for (int32_t r = 0; r < 3; ++r)
    for (int32_t c = 0; c < 2; ++c) trees.push_back(stump(r, c, 0, -0.5, 0.5, 2.0, c));
  const TreeEnsemble m = test::ensemble(trees, 2, 2, TreeLink::kSoftmax, "multi:softprob");
  std::mt19937_64 gen(1);
  const TreeData d = random_data(gen, 40, 2, [](const double* x) { return x[0] > 0 ? 1.0 : 0.0; });
  TreeDynamicsReport r = analyze_tree_dynamics(m, {&d, &d});
  r.feature_names = {"age", "income"};
  const std::vector<Record> recs = tree_round_records(r, 2);
  std::vector<std::string> seen;
  for (const Record& rec : recs) {
    EXPECT_EQ(rec.step, 2);
    EXPECT_TRUE(is_tree_site(rec.site));
    seen.push_back(rec.node + ":" + site_name(rec.site));
  }
  EXPECT_THAT(seen, ::testing::ElementsAre("trees/class0:round_output", "trees/class0:leaf_value",
                                           "trees/class1:round_output", "trees/class1:leaf_value",
                                           "features/age:split_gain", "features/income:split_gain",
                                           "loss/train:row_loss", "loss/valid:row_loss"));
  EXPECT_EQ(recs[0].stats.count, 40);
  EXPECT_EQ(recs[1].stats.count, 2);  // two leaves
  EXPECT_DOUBLE_EQ(recs[4].stats.sum, 2.0);
  EXPECT_NEAR(recs[6].stats.mean(), r.per_round[2].train_loss, 1e-12);

  // The module rules leave tree nodes to the tree rules: no NO_DATA, no FROZEN.
  std::vector<Record> all;
  for (std::size_t round = 0; round < 3; ++round)
    for (const Record& rec : tree_round_records(r, round)) all.push_back(rec);
  const Report report = build_report(all);
  EXPECT_EQ(report.nodes.size(), 6u);
  EXPECT_TRUE(report.healthy());
}

TEST(TreeDynamics, DataThatDoesNotFitTheModelIsAnError) {
  const TreeEnsemble m =
      test::ensemble({stump(0, 0, 0, -1, 1)}, 3, 1, TreeLink::kSigmoid, "binary:logistic");
  std::mt19937_64 gen(1);
  const TreeData four = random_data(gen, 5, 4, [](const double*) { return 1.0; });
  EXPECT_EQ(test::error_of([&] { analyze_tree_dynamics(m, {&four}); }),
            "data: 4 feature columns, the model has 3 features");
  TreeData empty;
  empty.cols = 3;
  EXPECT_EQ(test::error_of([&] { analyze_tree_dynamics(m, {&empty}); }), "data: no rows");
  TreeData three = random_data(gen, 5, 3, [](const double*) { return 2.0; });
  EXPECT_THAT(test::error_of([&] { analyze_tree_dynamics(m, {&three}); }),
              HasSubstr("data: row 1: label 2.000000 is outside [0, 1]"));
  three.y.clear();
  EXPECT_EQ(test::error_of([&] {
              analyze_tree_dynamics(m, {nullptr, &three});
            }),
            "validation data: no labels (the validation loss needs them)");
  TreeThresholds bad;
  bad.overfit_rise = -1;
  EXPECT_THAT(test::error_of([&] { analyze_tree_dynamics(m, {}, bad); }),
              HasSubstr("overfit_rise"));
}

}  // namespace
}  // namespace gradscope
