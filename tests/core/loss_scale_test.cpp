// Loss scaling: statistics of a scaled tensor brought back (scaled.h), the skipped-step counts
// and their verdict (loss_scale.h), the finding, and the counts a saved run keeps (run_sink.h).
#include "gradscope/core/audit/loss_scale.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "gradscope/core/audit/run_sink.h"
#include "gradscope/core/findings/findings.h"
#include "gradscope/core/stats/scaled.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;

Stats of(const std::vector<float>& x, const StatsOptions& o = {}) {
  return compute(TensorView::contiguous(x.data(), DType::kFloat32, {static_cast<int64_t>(x.size())}), o);
}

TEST(ScaledStats, APowerOfTwoScaleComesBackBitForBit) {
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.f, 1e-3f);
  std::vector<float> x(1000);
  for (float& v : x) v = normal(rng);
  x[0] = 0;
  x[1] = 5e-8f;  // zero by dead_eps: must stay so at scale
  x[2] = 60;     // saturated
  x[3] = NAN;
  const double scale = 65536;
  std::vector<float> scaled(x);
  for (float& v : scaled) v = static_cast<float>(v * scale);
  const Stats want = of(x);
  const Stats got = unscaled(of(scaled, scaled_thresholds({}, scale)), scale);
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.nan, want.nan);
  EXPECT_EQ(got.zero, want.zero);
  EXPECT_EQ(got.saturated, want.saturated);
  EXPECT_EQ(got.sum, want.sum);
  EXPECT_EQ(got.sum_sq, want.sum_sq);
  EXPECT_EQ(got.sum_abs, want.sum_abs);
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
  EXPECT_EQ(got.max_abs, want.max_abs);
  // The control: without the scaled thresholds, x[1] is no longer counted as zero.
  EXPECT_EQ(unscaled(of(scaled), scale).zero, want.zero - 1);
}

TEST(ScaledStats, NoFiniteValueKeepsItsInfiniteExtremes) {
  const Stats s = unscaled(of({NAN, NAN}), 8);
  EXPECT_EQ(s.min, INFINITY);
  EXPECT_EQ(s.max, -INFINITY);
  EXPECT_EQ(s.max_abs, 0);
}

LossScaleReport run(const std::vector<bool>& skipped, double scale = 65536) {
  LossScaleReport r;
  for (std::size_t i = 0; i < skipped.size(); ++i) {
    add_loss_scale_step(r, static_cast<int64_t>(i), scale, skipped[i]);
    if (skipped[i]) scale /= 2;
  }
  judge_loss_scale(r);
  return r;
}

std::vector<bool> steps(int n, std::initializer_list<int> skipped) {
  std::vector<bool> out(static_cast<std::size_t>(n), false);
  for (int s : skipped) out[static_cast<std::size_t>(s)] = true;
  return out;
}

TEST(LossScale, NoSkipIsNoFinding) {
  const LossScaleReport r = run(steps(50, {}));
  EXPECT_EQ(r.steps, 50);
  EXPECT_EQ(r.verdict, LossScaleReport::Verdict::kNone);
  EXPECT_FALSE(loss_scale_finding(r).has_value());
}

TEST(LossScale, CalibrationAtTheStartIsInformational) {
  const LossScaleReport r = run(steps(100, {0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(r.skipped, 7);
  EXPECT_EQ(r.first_fit, 7);
  EXPECT_EQ(r.skipped_after_fit, 0);
  EXPECT_EQ(r.last_scale, 512);
  EXPECT_EQ(r.verdict, LossScaleReport::Verdict::kInfo);
}

TEST(LossScale, RareSkipsAfterTheScaleFitAreInformational) {
  // A scaler that grows its scale every 25 steps overflows once after each growth.
  const LossScaleReport r = run(steps(200, {0, 25, 50, 75, 100, 125, 150, 175}));
  EXPECT_EQ(r.skipped_after_fit, 7);
  EXPECT_EQ(r.verdict, LossScaleReport::Verdict::kInfo);
}

TEST(LossScale, FrequentSkipsPersistingSkipsAndACollapsedScaleAreWarnings) {
  EXPECT_EQ(run(steps(40, {5, 10, 15, 20})).verdict, LossScaleReport::Verdict::kWarning);  // 4 of 40
  EXPECT_EQ(run(steps(40, {35, 36, 37, 38, 39})).verdict, LossScaleReport::Verdict::kWarning);
  EXPECT_EQ(run(steps(10, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})).verdict, LossScaleReport::Verdict::kWarning);
  EXPECT_EQ(run(steps(20, {0, 1}), 1.0).verdict, LossScaleReport::Verdict::kWarning);  // 0.25 at the end
  // The controls: one fewer trailing skip, or the same skips spread thinner.
  EXPECT_EQ(run(steps(100, {96, 97, 98, 99})).verdict, LossScaleReport::Verdict::kInfo);
  EXPECT_EQ(run(steps(100, {5, 10})).verdict, LossScaleReport::Verdict::kInfo);
}

TEST(LossScale, TheFindingSaysWhichStepsAndHowTheScaleMoved) {
  const auto f = loss_scale_finding(run(steps(20, {0, 1, 2})));
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->type, "LOSS_SCALE_OVERFLOW");
  EXPECT_EQ(f->kind, FindingKind::kLossScale);
  EXPECT_EQ(f->since_step, 0);
  EXPECT_THAT(f->premise, HasSubstr("informational: 3 steps of 20 skipped on overflow (steps 0-2)"));
  EXPECT_THAT(f->premise, HasSubstr("loss scale 65536 at the first step, 8192 at the last"));
  EXPECT_THAT(f->premise, HasSubstr("first fit at step 3, then 0 of 17 skipped"));
  EXPECT_EQ(f->action, loss_scale_guidance(false).action);
  const auto w = loss_scale_finding(run(steps(10, {5, 6, 7, 8, 9})));
  ASSERT_TRUE(w.has_value());
  EXPECT_THAT(w->premise, HasSubstr("warning: 5 steps of 10"));
  EXPECT_EQ(w->action, loss_scale_guidance(true).action);
}

TEST(LossScale, TheSkippedStepsAndTheScaleChangesAreListed) {
  const LossScaleReport r = run(steps(30, {0, 1, 2, 10, 20, 21}));
  EXPECT_EQ(r.skipped_steps, (std::vector<int64_t>{0, 1, 2, 10, 20, 21}));
  // 65536 at 0, halved after each skip: from step 1, 2, 3, 11, 21, 22 on.
  const std::vector<std::pair<int64_t, double>> want{{0, 65536}, {1, 32768}, {2, 16384}, {3, 8192},
                                                     {11, 4096}, {21, 2048}, {22, 1024}};
  EXPECT_EQ(r.scale_changes, want);
  const auto f = loss_scale_finding(r);
  ASSERT_TRUE(f.has_value());
  EXPECT_THAT(f->premise, HasSubstr("(steps 0-2, 10, 20-21)"));
  // A long run keeps the first kListed of each list; the premise says how many more.
  LossScaleReport big;
  for (int64_t s = 0; s < 1500; ++s) add_loss_scale_step(big, s, 1024.0 / static_cast<double>(1 + s % 2), s % 2 == 1);
  judge_loss_scale(big);
  EXPECT_EQ(big.skipped, 750);
  EXPECT_EQ(big.skipped_steps.size(), 750u);
  EXPECT_EQ(big.scale_changes.size(), LossScaleReport::kListed);
  EXPECT_THAT(loss_scale_finding(big)->premise, HasSubstr("and 738 more"));
}

TEST(LossScale, ASavedRunKeepsTheCountsAndJudgesThemAgain) {
  Report original;
  original.loss_scale = run(steps(30, {0, 1, 27, 28, 29}));
  Report restored;
  apply_node_values(restored, node_values(original));
  const LossScaleReport& a = original.loss_scale;
  const LossScaleReport& b = restored.loss_scale;
  EXPECT_EQ(b.steps, a.steps);
  EXPECT_EQ(b.skipped, a.skipped);
  EXPECT_EQ(b.first_skipped, a.first_skipped);
  EXPECT_EQ(b.last_skipped, a.last_skipped);
  EXPECT_EQ(b.first_fit, a.first_fit);
  EXPECT_EQ(b.steps_after_fit, a.steps_after_fit);
  EXPECT_EQ(b.skipped_after_fit, a.skipped_after_fit);
  EXPECT_EQ(b.trailing_skipped, a.trailing_skipped);
  EXPECT_EQ(b.first_scale, a.first_scale);
  EXPECT_EQ(b.last_scale, a.last_scale);
  EXPECT_EQ(b.min_scale, a.min_scale);
  EXPECT_EQ(b.skipped_steps, a.skipped_steps);
  EXPECT_EQ(b.scale_changes, a.scale_changes);
  EXPECT_EQ(b.verdict, a.verdict);
  EXPECT_FALSE(restored.healthy());  // 3 skips in the 28 steps after the scale fit: a warning
  // A run without a loss scale keeps no such values.
  EXPECT_TRUE(node_values(Report{}).empty());
}

TEST(LossScale, DamagedSavedCountsAreIgnored) {
  Report r;
  apply_node_values(r, {{"", std::string(kLossScalePrefix) + "steps", NAN},
                        {"", std::string(kLossScalePrefix) + "skipped", 1e300},
                        {"", std::string(kLossScalePrefix) + "unknown", 3},
                        {"", std::string(kLossScalePrefix) + "skipped_step", -4},
                        {"", std::string(kLossScalePrefix) + "skipped_step", 2.5},
                        {"", std::string(kLossScalePrefix) + "scale_at.x1", 8},
                        {"", std::string(kLossScalePrefix) + "scale_at.", 8}});
  EXPECT_EQ(r.loss_scale.steps, 0);
  EXPECT_EQ(r.loss_scale.skipped, 0);
  EXPECT_TRUE(r.loss_scale.skipped_steps.empty());
  EXPECT_TRUE(r.loss_scale.scale_changes.empty());
}

}  // namespace
}  // namespace gradscope
