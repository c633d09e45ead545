// Interaction pairs from the trees' paths, the gain credited to each, and the VIF filter; and
// the metrics the loss rules read.
#include "gradscope/core/trees/interactions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <vector>

#include "../common/error_of.h"
#include "gradscope/core/trees/loss.h"
#include "tree_builders.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;

// Root f0 (gain 8); left child f1 (gain 3) whose left child is f2 (gain 1); right child f2
// (gain 2). Leaves elsewhere.
Tree three_features() {
  Tree t;
  auto split = [](int32_t f, double gain, int32_t l, int32_t r) {
    TreeNode n;
    n.feature = f;
    n.gain = gain;
    n.left = l;
    n.right = r;
    return n;
  };
  t.nodes = {split(0, 8, 1, 2), split(1, 3, 3, 4), split(2, 2, 5, 6), split(2, 1, 7, 8), TreeNode{},
             TreeNode{},        TreeNode{},        TreeNode{},        TreeNode{}};
  return t;
}

TEST(TreeInteractions, EachSplitCreditsTheDistinctFeaturesAboveItWithItsGain) {
  const TreeEnsemble m = test::ensemble({three_features()}, 4);
  const InteractionReport r = suggest_interactions(m, nullptr);
  EXPECT_TRUE(r.by_gain);
  EXPECT_FALSE(r.filtered);
  EXPECT_EQ(r.pairs, 3);
  // (0,1): f1 under f0, gain 3. (0,2): right f2 under f0 (2) + deep f2 under f0 (1) = 3.
  // (1,2): deep f2 under f1, gain 1. Ties keep the lower pair first.
  ASSERT_EQ(r.kept.size(), 3u);
  EXPECT_EQ(r.kept[0].a, 0);
  EXPECT_EQ(r.kept[0].b, 1);
  EXPECT_DOUBLE_EQ(r.kept[0].gain, 3);
  EXPECT_EQ(r.kept[0].count, 1);
  EXPECT_EQ(r.kept[1].b, 2);
  EXPECT_DOUBLE_EQ(r.kept[1].gain, 3);
  EXPECT_EQ(r.kept[1].count, 2);
  EXPECT_EQ(r.kept[1].trees, 1);
  EXPECT_EQ(r.kept[2].a, 1);
  EXPECT_DOUBLE_EQ(r.kept[2].share, 1.0 / 7);
  EXPECT_TRUE(std::isnan(r.kept[0].vif));
}

// f2 = f0 + small noise: one signal. f2 is merged into f0 (more gain) before the pairs are
// formed, so f2's splits count as f0's: the pair (0, 1) gains the deep f2 split under f1, and
// f2 under f0 is one signal split twice, no pair. Before, (0, 2) was listed as a dropped pair
// and (1, 2) suggested beside (0, 1): one interaction suggested once per copy of a feature.
TEST(TreeInteractions, NearDuplicateFeaturesAreMergedBeforePairsAreFormed) {
  const TreeEnsemble m = test::ensemble({three_features(),
                                         [] {
                                           Tree t = three_features();
                                           t.round = 1;
                                           return t;
                                         }()},
                                        4);
  std::mt19937_64 gen(4);
  TreeData d = test::random_data(gen, 500, 4, [](const double*) { return 0.0; });
  std::normal_distribution<double> noise(0, 0.05);
  for (std::size_t i = 0; i < d.rows; ++i) d.x[i * 4 + 2] = d.x[i * 4] + noise(gen);
  const InteractionReport r = suggest_interactions(m, &d);
  EXPECT_TRUE(r.filtered);
  ASSERT_EQ(r.merged.size(), 1u);
  EXPECT_EQ(r.merged[0].a, 2);  // f2 (gain 6) into f0 (gain 16)
  EXPECT_EQ(r.merged[0].b, 0);
  EXPECT_GT(r.merged[0].vif, 5);
  EXPECT_NEAR(r.merged[0].vif, 1 / (1 - std::pow(column_correlation(d, 0, 2), 2)), 1e-9);
  EXPECT_TRUE(r.dropped.empty());
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_EQ(r.kept[0].a, 0);
  EXPECT_EQ(r.kept[0].b, 1);
  EXPECT_DOUBLE_EQ(r.kept[0].gain, 2 * (3 + 1));  // f1 under f0, and f2 (as f0) under f1
  EXPECT_EQ(r.kept[0].count, 4);
  EXPECT_EQ(r.kept[0].trees, 2);
  EXPECT_EQ(r.pairs, 1);
  EXPECT_LT(r.kept[0].vif, 1.1);

  // Without data nothing is merged: three pairs.
  EXPECT_EQ(suggest_interactions(m, nullptr).kept.size(), 3u);
  TreeThresholds one;
  one.max_interactions = 1;
  EXPECT_EQ(suggest_interactions(m, &d, one).kept.size(), 1u);
}

TEST(TreeInteractions, CorrelationSkipsMissingValuesAndConstantColumns) {
  TreeData d;
  d.rows = 4;
  d.cols = 3;
  const double nan = std::nan("");
  d.x = {1, 2, 5, 2, 4, 5, 3, nan, 5, 4, 8, 5};
  EXPECT_DOUBLE_EQ(column_correlation(d, 0, 1), 1.0);    // rows 1, 2, 4: y = 2x
  EXPECT_TRUE(std::isnan(column_correlation(d, 0, 2)));  // column 2 is constant
}

TEST(TreeLossMetric, RowLossesAreTheMetricsAsXGBoostComputesThem) {
  const TreeEnsemble bin =
      test::ensemble({test::stump(0, 0, 0, -1, 1)}, 1, 1, TreeLink::kSigmoid, "binary:logistic");
  EXPECT_EQ(tree_loss_of(bin), TreeLoss::kLogLoss);
  // In double from the margin: a confident miss at margin 20 costs 20, as the definition says
  // (XGBoost's float32 probability would be exactly 1 there, clipped to a cost of 36.8).
  const double z = 0.3, twenty = 20;
  EXPECT_NEAR(row_loss(bin, TreeLoss::kLogLoss, &z, 1), std::log1p(std::exp(-z)), 1e-15);
  EXPECT_NEAR(row_loss(bin, TreeLoss::kLogLoss, &z, 0), std::log1p(std::exp(z)), 1e-15);
  EXPECT_NEAR(row_loss(bin, TreeLoss::kLogLoss, &twenty, 0), 20, 1e-6);
  const double huge = 100;
  EXPECT_NEAR(row_loss(bin, TreeLoss::kLogLoss, &huge, 0), -std::log(1e-16), 1e-9);  // clipped
  TreeEnsemble lgb = bin;  // LightGBM scales the margin by its sigmoid parameter
  lgb.dialect = TreeDialect::kLightGBM;
  lgb.sigmoid_scale = 2;
  EXPECT_NEAR(row_loss(lgb, TreeLoss::kLogLoss, &z, 1), std::log1p(std::exp(-2 * z)), 1e-15);
  const TreeEnsemble multi =
      test::ensemble({test::stump(0, 0, 0, -1, 1, 1, 0), test::stump(0, 0, 0, -1, 1, 1, 1),
                      test::stump(0, 0, 0, -1, 1, 1, 2)},
                     1, 3, TreeLink::kSoftmax, "multi:softprob");
  const double raw[] = {1, 2, 3};
  EXPECT_NEAR(row_loss(multi, TreeLoss::kMLogLoss, raw, 0),
              std::log(std::exp(1) + std::exp(2) + std::exp(3)) - 1, 1e-12);
  EXPECT_TRUE(std::isnan(row_loss(multi, TreeLoss::kMLogLoss, raw, 3)));  // no such class
  const TreeEnsemble reg = test::ensemble({test::stump(0, 0, 0, -1, 1)}, 1);
  EXPECT_EQ(tree_loss_of(reg), TreeLoss::kRmse);
  const double p = 2.5;
  EXPECT_DOUBLE_EQ(row_loss(reg, TreeLoss::kRmse, &p, 1), 2.25);
  EXPECT_DOUBLE_EQ(finish_loss(TreeLoss::kRmse, 8, 2), 2.0);
  EXPECT_DOUBLE_EQ(finish_loss(TreeLoss::kLogLoss, 8, 2), 4.0);
}

TEST(TreeLossMetric, LabelsTheMetricCannotTakeNameTheirRow) {
  const TreeEnsemble multi =
      test::ensemble({test::stump(0, 0, 0, -1, 1, 1, 0), test::stump(0, 0, 0, -1, 1, 1, 1)}, 1, 2,
                     TreeLink::kSoftmax, "multi:softprob");
  TreeData d;
  d.rows = 3;
  d.cols = 1;
  d.x = {0, 0, 0};
  d.y = {0, 1, 1.5};
  EXPECT_THAT(test::error_of([&] { check_tree_labels(multi, TreeLoss::kMLogLoss, d, "data"); }),
              HasSubstr("data: row 3: label 1.500000 is not a class of this 2-class model"));
  d.y = {0, 1, 2};
  EXPECT_THAT(test::error_of([&] { check_tree_labels(multi, TreeLoss::kMLogLoss, d, "data"); }),
              HasSubstr("row 3: label 2.000000 is not a class"));
  d.y = {0, 1, 1};
  EXPECT_EQ(test::error_of([&] { check_tree_labels(multi, TreeLoss::kMLogLoss, d, "data"); }),
            "no error");
  // LightGBM names, CatBoost names and objectives without a metric.
  TreeEnsemble m = multi;
  m.num_outputs = 1;
  m.link = TreeLink::kIdentity;
  for (const char* o : {"regression", "l2", "RMSE", "reg:squarederror"}) {
    m.objective = o;
    EXPECT_EQ(tree_loss_of(m), TreeLoss::kRmse) << o;
  }
  for (const char* o : {"quantile", "rank:pairwise", "lambdarank", "MAE"}) {
    m.objective = o;
    EXPECT_EQ(tree_loss_of(m), TreeLoss::kNone) << o;
  }
}

// A chain: split i (node 2i) on features[i], its left child a leaf, its right the next split.
Tree chain(const std::vector<int32_t>& features) {
  Tree t;
  const int32_t n = static_cast<int32_t>(features.size());
  t.nodes.resize(static_cast<std::size_t>(2 * n + 1));
  for (int32_t i = 0; i < n; ++i) {
    TreeNode& s = t.nodes[static_cast<std::size_t>(2 * i)];
    s.feature = features[static_cast<std::size_t>(i)];
    s.gain = 1;
    s.left = 2 * i + 1;
    s.right = 2 * i + 2;
  }
  return t;
}

TEST(TreeInteractions, ASplitLooksForItsPartnersUpToTheReachAbove) {
  for (const int32_t between : {kInteractionReach - 1, kInteractionReach}) {
    SCOPED_TRACE(between);
    std::vector<int32_t> features{1};
    features.insert(features.end(), static_cast<std::size_t>(between), 0);
    features.push_back(2);  // `between` + 1 levels below the split on feature 1
    const InteractionReport r = suggest_interactions(test::ensemble({chain(features)}, 3), nullptr);
    bool one_two = false;
    for (const InteractionPair& p : r.kept) one_two = one_two || (p.a == 1 && p.b == 2);
    EXPECT_EQ(one_two, between + 1 <= kInteractionReach);
  }
}

// A 300,000-deep chain cycling through 4 features took over a minute when each split walked
// every ancestor (40,000 deep: 1.8 s, quadratic); within the reach it is linear.
TEST(TreeInteractions, ADeepChainTakesLinearTime) {
  constexpr int32_t kDepth = 300000;
  std::vector<int32_t> features(kDepth);
  for (int32_t i = 0; i < kDepth; ++i) features[static_cast<std::size_t>(i)] = i % 4;
  const TreeEnsemble m = test::ensemble({chain(features)}, 4);
  const auto start = std::chrono::steady_clock::now();
  const InteractionReport r = suggest_interactions(m, nullptr);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(took, 20.0) << "quadratic in depth again?";
  // From depth 3 on, each split credits the three other features once; above that, split 1
  // (feature 1) credits (0,1) and split 2 (feature 2) credits (0,2) and (1,2).
  EXPECT_EQ(r.pairs, 6);
  for (const InteractionPair& p : r.kept) {
    int64_t expect = 0;
    for (int32_t d = 3; d < kDepth; ++d) expect += (d % 4 == p.a || d % 4 == p.b) ? 1 : 0;
    if ((p.a == 0 && p.b == 1) || (p.a == 0 && p.b == 2) || (p.a == 1 && p.b == 2)) ++expect;
    EXPECT_EQ(p.count, expect) << p.a << " x " << p.b;
  }
}

}  // namespace
}  // namespace gradscope
