// Interaction suggestions of live XGBoost models, tested on the rows they were
// trained on: on breast_cancer (the measurement in docs/trees.md) and with a
// planted interaction among breast_cancer's own features, where the truth is
// the formula of the planted label.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "../common/require_data.h"
#include "gradscope/core/trees/dynamics.h"
#include "live_training.h"

namespace gradscope {
namespace {

void print(const TreeDynamicsReport &r, const char *what) {
  const InteractionReport &in = r.interactions;
  std::printf("%s: %lld pairs on paths, %zu tested on %lld rows, %zu "
              "suggested, %zu dropped as "
              "collinear\n",
              what, static_cast<long long>(in.pairs),
              in.kept.size() + in.no_evidence.size(),
              static_cast<long long>(in.test_rows), in.kept.size(),
              in.dropped.size());
  for (const auto *list : {&in.kept, &in.no_evidence})
    for (const InteractionPair &p : *list)
      std::printf("  %s x %s: share %.4g, %lld splits, r %.3g, held-out gain "
                  "%.4g, p %.4g: %s\n",
                  r.feature_name(p.a).c_str(), r.feature_name(p.b).c_str(),
                  p.share, static_cast<long long>(p.count), p.correlation,
                  p.cv_gain, p.p_value,
                  list == &in.kept ? "suggested" : "no evidence");
  for (const InteractionPair &p : in.dropped)
    std::printf("  %s x %s: dropped, r %.3g\n", r.feature_name(p.a).c_str(),
                r.feature_name(p.b).c_str(), p.correlation);
  for (const InteractionPair &p : in.merged)
    std::printf("  %s merged into %s, r %.3g\n", r.feature_name(p.a).c_str(),
                r.feature_name(p.b).c_str(), p.correlation);
}

TEST(TreeInteractionsLive,
     BreastCancersPairsAreTestedAndNearDuplicatesDropped) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("breast_cancer.csv"));
  const test::LiveCase c = test::healthy_case("breast_cancer");
  const auto t =
      test::train_live(test::load_data(c.data), 0.3, c.params, c.rounds);
  const TreeDynamicsReport r =
      analyze_tree_dynamics(t->model, {&t->train, &t->valid});
  print(r, "breast_cancer healthy control");
  const InteractionReport &in = r.interactions;
  ASSERT_TRUE(in.tested);
  EXPECT_EQ(in.test_rows, static_cast<int64_t>(t->train.rows));
  ASSERT_GT(in.pairs, r.thresholds.max_interactions);
  EXPECT_EQ(in.kept.size() + in.no_evidence.size(),
            static_cast<std::size_t>(
                r.thresholds.max_interactions)); // every listed pair tested
  // The test's verdict on each pair is its gain and p, checked here from the
  // columns' own r: no kept or tested pair is a near-duplicate.
  for (const auto *list : {&in.kept, &in.no_evidence})
    for (const InteractionPair &p : *list) {
      EXPECT_LE(std::fabs(column_correlation(t->train, p.a, p.b)), 0.8945)
          << p.a << "," << p.b;
      EXPECT_TRUE(std::isfinite(p.cv_gain));
    }
  for (const InteractionPair &p : in.kept) {
    EXPECT_GT(p.cv_gain, 0);
    EXPECT_LT(p.p_value, kInteractionAlpha);
  }
}

TEST(TreeInteractionsLive, APlantedInteractionOfTwoRealFeaturesIsSuggested) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("breast_cancer.csv"));
  // The label becomes the sign of the product of two standardised real columns
  // (mean radius, column 0, and mean texture, column 1; r 0.32): a pure
  // interaction, no main effect.
  TreeData all = test::load_data("breast_cancer");
  double mean[2] = {0, 0};
  for (std::size_t i = 0; i < all.rows; ++i)
    for (int f = 0; f < 2; ++f)
      mean[f] += all.row(i)[f] / static_cast<double>(all.rows);
  for (std::size_t i = 0; i < all.rows; ++i)
    all.y[i] =
        (all.row(i)[0] - mean[0]) * (all.row(i)[1] - mean[1]) > 0 ? 1.0 : 0.0;
  const auto t = test::train_live(
      all, 0.3,
      {{"objective", "binary:logistic"}, {"eta", "0.3"}, {"max_depth", "3"}},
      100);
  const TreeDynamicsReport r =
      analyze_tree_dynamics(t->model, {&t->train, &t->valid});
  print(r, "breast_cancer, label = sign(radius x texture)");
  const InteractionReport &in = r.interactions;
  bool found = false;
  for (const InteractionPair &p : in.kept)
    if (p.a == 0 && p.b == 1) {
      found = true;
      EXPECT_GT(p.cv_gain, 0.05);
      EXPECT_LT(p.p_value, 1e-6);
    }
  EXPECT_TRUE(found) << "radius x texture not suggested";
  // Area, perimeter and the worst radius are near-copies of radius (|r| above
  // the VIF cut's 0.894, computed here from the columns): texture with any of
  // them is the planted pair again, suggested once (as radius x texture) and
  // never once per copy, as it was before the copies were merged.
  int copies = 0;
  for (int32_t f = 2; f < static_cast<int32_t>(all.cols); ++f)
    if (std::fabs(column_correlation(t->train, 0, f)) > 0.8945) {
      ++copies;
      for (const InteractionPair &p : in.kept)
        EXPECT_FALSE(p.a == 1 && p.b == f) << "texture x copy " << f;
    }
  EXPECT_GE(copies, 2);
  EXPECT_FALSE(in.merged.empty());
}

} // namespace
} // namespace gradscope
