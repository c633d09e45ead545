// Flags at their threshold boundaries, evidence, NO_DATA, merging, ordering.
#include "gradscope/core/audit/rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "gradscope/core/error.h"
#include "../common/stats_fixture.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;

// A summary of `count` finite values whose L2 norm is exactly `l2`, with `zeros` zeros and
// `saturated` saturated elements.
Stats summary(double l2, int64_t count = 100, int64_t zeros = 0, int64_t saturated = 0) {
  return test::with_l2(l2, count, zeros, saturated);
}

Record rec(int64_t step, const std::string& node, Site site, Stats s) {
  return Record{step, node, site, s};
}

const NodeReport& only(const Report& r) {
  EXPECT_EQ(r.nodes.size(), 1u);
  return r.nodes.at(0);
}

TEST(Rules, GradientExactlyAtThresholdsIsHealthy) {
  const Thresholds t;
  for (double g : {t.grad_lo, t.grad_hi}) {
    const Report r = build_report({rec(0, "fc", Site::kParamGrad, summary(g))});
    EXPECT_TRUE(only(r).flags.contains(Flag::kHealthy)) << g;
    EXPECT_TRUE(r.healthy());
  }
}

TEST(Rules, VanishingJustBelowGradLo) {
  const Thresholds t;
  const double g = std::nextafter(t.grad_lo, 0.0);
  const Report r = build_report({rec(0, "fc", Site::kParamGrad, summary(g))});
  const NodeReport& n = only(r);
  EXPECT_TRUE(n.flags.contains(Flag::kVanishing));
  EXPECT_FALSE(n.flags.contains(Flag::kHealthy));
  ASSERT_EQ(n.evidence.size(), 1u);
  EXPECT_EQ(n.evidence[0].value, g);
  EXPECT_EQ(n.evidence[0].threshold, t.grad_lo);
  EXPECT_EQ(n.evidence[0].site, Site::kParamGrad);
  EXPECT_FALSE(r.healthy());
}

TEST(Rules, ExplodingJustAboveGradHi) {
  const double g = std::nextafter(1e3, 1e4);
  const NodeReport n = only(build_report({rec(0, "fc", Site::kParamGrad, summary(g))}));
  EXPECT_TRUE(n.flags.contains(Flag::kExploding));
  EXPECT_FALSE(n.flags.contains(Flag::kVanishing));
}

TEST(Rules, VanishingUsesTheMeanOverStepsAndReportsTheFirstStepBelow) {
  // Steps 0-2 healthy (1e-6), steps 3-9 tiny: the mean (3e-7 + ~0) / 10 < 1e-7.
  std::vector<Record> rs;
  for (int s = 0; s < 10; ++s) rs.push_back(rec(s, "fc", Site::kParamGrad, summary(s < 3 ? 1e-7 * 3 : 1e-12)));
  const NodeReport n = only(build_report(rs));
  ASSERT_TRUE(n.flags.contains(Flag::kVanishing));
  EXPECT_EQ(n.evidence[0].first_step, 3);
  EXPECT_NEAR(n.evidence[0].value, (3 * 3e-7 + 7 * 1e-12) / 10, 1e-20);
  EXPECT_EQ(n.steps, 10);
  EXPECT_NEAR(n.param_grad_l2, (3 * 3e-7 + 7 * 1e-12) / 10, 1e-20);
}

TEST(Rules, OutputGradientJudgesNodesWithoutParameters) {
  const NodeReport n = only(build_report({rec(0, "relu", Site::kOutputGrad, summary(1e-9))}));
  ASSERT_TRUE(n.flags.contains(Flag::kVanishing));
  EXPECT_EQ(n.evidence[0].site, Site::kOutputGrad);
}

TEST(Rules, DeadAtTheFractionBoundary) {
  // 95 of 100 zero equals dead_frac 0.95: not dead; 96 is.
  EXPECT_FALSE(only(build_report({rec(0, "a", Site::kActivation, summary(1, 100, 95))}))
                   .flags.contains(Flag::kDead));
  const NodeReport n = only(build_report({rec(0, "a", Site::kActivation, summary(1, 100, 96))}));
  ASSERT_TRUE(n.flags.contains(Flag::kDead));
  EXPECT_DOUBLE_EQ(n.evidence[0].value, 0.96);
  EXPECT_EQ(n.evidence[0].site, Site::kActivation);
}

TEST(Rules, ZeroParameterGradientsAreNotDead) {
  // DEAD describes outputs; all-zero gradient elements are judged by the norm (VANISHING).
  const NodeReport n = only(build_report({rec(0, "a", Site::kParamGrad, summary(1, 100, 100))}));
  EXPECT_EQ(n.flags.join(), "HEALTHY");
}

TEST(Rules, SaturatedAtTheFractionBoundary) {
  EXPECT_FALSE(only(build_report({rec(0, "a", Site::kPreActivation, summary(1, 100, 0, 50))}))
                   .flags.contains(Flag::kSaturated));
  const NodeReport n = only(build_report({rec(4, "a", Site::kPreActivation, summary(1, 100, 0, 51))}));
  ASSERT_TRUE(n.flags.contains(Flag::kSaturated));
  EXPECT_EQ(n.evidence[0].first_step, 4);
}

TEST(Rules, LargeOutputsWithoutASquashingFunctionAreNotSaturated) {
  // A Linear feeding a residual stream: every output beyond activation_saturation, and no
  // squashing function after it (no pre-activation recorded). Its gradient is not flat.
  std::vector<Record> records;
  for (int64_t s = 0; s < 20; ++s) {
    records.push_back(rec(s, "attn", Site::kActivation, summary(60, 100, 0, 100)));
    records.push_back(rec(s, "attn", Site::kParamGrad, summary(1)));
  }
  const NodeReport n = only(build_report(records));
  EXPECT_FALSE(n.flags.contains(Flag::kSaturated)) << n.flags.join();
  EXPECT_EQ(n.flags.join(), "HEALTHY");
}

TEST(Rules, NaNAndInfNameTheFirstStepAndSite) {
  Stats nan = summary(1);
  nan.nan = 2;
  nan.count += 2;
  Stats inf = summary(1);
  inf.neg_inf = 1;
  inf.count += 1;
  const NodeReport n = only(build_report({rec(0, "fc", Site::kParamGrad, summary(1)),
                                          rec(1, "fc", Site::kActivation, summary(1)),
                                          rec(2, "fc", Site::kParamGrad, nan),
                                          rec(5, "fc", Site::kActivation, nan),
                                          rec(5, "fc", Site::kOutputGrad, inf)}));
  EXPECT_TRUE(n.flags.contains(Flag::kNaN));
  EXPECT_TRUE(n.flags.contains(Flag::kInf));
  EXPECT_EQ(n.nan, 4);
  EXPECT_EQ(n.inf, 1);
  EXPECT_EQ(n.evidence[0].flag, Flag::kNaN);
  EXPECT_EQ(n.evidence[0].first_step, 2);
  EXPECT_EQ(n.evidence[0].site, Site::kParamGrad);
  EXPECT_EQ(n.evidence[1].flag, Flag::kInf);
  EXPECT_EQ(n.evidence[1].first_step, 5);
  EXPECT_EQ(n.evidence[1].site, Site::kOutputGrad);
}

// A step whose values are all NaN has no L2 to average: the means cover the steps with finite
// values and the report says how many were left out (the nan-later demo's logfeat read a mean
// |param| of 45.4 where its finite steps average 432).
TEST(Rules, MeansLeaveOutStepsWithoutFiniteValues) {
  Stats all_nan;
  all_nan.count = 4;
  all_nan.nan = 4;
  std::vector<Record> records;
  for (int64_t step = 0; step < 4; ++step) {
    const bool broken = step >= 2;
    records.push_back(rec(step, "fc", Site::kParam, broken ? all_nan : summary(10.0 * (step + 1))));
    records.push_back(rec(step, "fc", Site::kParamGrad, broken ? all_nan : summary(1.0)));
    records.push_back(rec(step, "fc", Site::kOutputGrad, broken ? all_nan : summary(3.0)));
  }
  const NodeReport n = only(build_report(records));
  EXPECT_DOUBLE_EQ(n.param_l2, 15.0);  // (10 + 20) / 2, not (10 + 20 + 0 + 0) / 4
  EXPECT_DOUBLE_EQ(n.param_grad_l2, 1.0);
  EXPECT_DOUBLE_EQ(n.out_grad_l2, 3.0);
  EXPECT_EQ(n.nonfinite_steps, 2);
  ASSERT_TRUE(n.flags.contains(Flag::kNaN));
  EXPECT_THAT(n.evidence[0].measure, HasSubstr("2 steps without a finite value left out of the means"));
  // A partly NaN step keeps the L2 of its finite values.
  Stats partial = summary(2.0);
  partial.nan = 3;
  partial.count += 3;
  const NodeReport p = only(build_report({rec(0, "fc", Site::kParamGrad, partial),
                                          rec(1, "fc", Site::kParamGrad, summary(4.0))}));
  EXPECT_DOUBLE_EQ(p.param_grad_l2, 3.0);
  EXPECT_EQ(p.nonfinite_steps, 0);
}

// A node whose every gradient step is NaN has no mean to judge: NaN, not VANISHING.
TEST(Rules, AllNaNGradientsAreNotVanishing) {
  Stats all_nan;
  all_nan.count = 4;
  all_nan.nan = 4;
  const NodeReport n = only(build_report({rec(0, "fc", Site::kParamGrad, all_nan),
                                          rec(1, "fc", Site::kParamGrad, all_nan)}));
  EXPECT_TRUE(n.flags.contains(Flag::kNaN));
  EXPECT_FALSE(n.flags.contains(Flag::kVanishing));
  EXPECT_TRUE(std::isnan(n.param_grad_l2));
  EXPECT_EQ(n.nonfinite_steps, 2);
}

TEST(Rules, NoDataForDeclaredAndEmptyNodes) {
  ReportBuilder b;
  b.declare("never");
  b.add(rec(0, "empty", Site::kActivation, Stats{}));
  b.add(rec(0, "ok", Site::kParamGrad, summary(1)));
  const Report r = b.build();
  ASSERT_EQ(r.nodes.size(), 3u);
  EXPECT_EQ(r.nodes[0].flags.join(), "NO_DATA");
  EXPECT_EQ(r.nodes[0].steps, 0);
  EXPECT_EQ(r.nodes[1].flags.join(), "NO_DATA");
  EXPECT_EQ(r.nodes[2].flags.join(), "HEALTHY");
  EXPECT_TRUE(std::isnan(r.nodes[0].param_grad_l2));
}

TEST(Rules, RecordsOfOneStepMerge) {
  // A module called twice in one step: both calls count; L2 is over both tensors.
  const NodeReport n = only(build_report({rec(0, "fc", Site::kParamGrad, summary(3)),
                                          rec(0, "fc", Site::kParamGrad, summary(4)),
                                          rec(1, "fc", Site::kParamGrad, summary(5))}));
  EXPECT_EQ(n.steps, 2);
  EXPECT_DOUBLE_EQ(n.param_grad_l2, 5.0);  // mean of 5 (sqrt(9+16)) and 5
}

TEST(Rules, TableColumnsAndRatio) {
  Stats act = summary(1, 4);
  act.sum = 2;       // mean 0.5
  act.sum_abs = 3;   // mean |x| 0.75
  act.sum_sq = 2;    // E[x^2] 0.5, variance 0.25
  const NodeReport n = only(build_report({rec(0, "fc", Site::kActivation, act),
                                          rec(0, "fc", Site::kParamGrad, summary(0.5)),
                                          rec(0, "fc", Site::kParam, summary(10)),
                                          rec(0, "fc", Site::kOutputGrad, summary(0.25))}));
  EXPECT_DOUBLE_EQ(n.act_mean_abs, 0.75);
  EXPECT_DOUBLE_EQ(n.act_std, 0.5);
  EXPECT_DOUBLE_EQ(n.param_grad_l2, 0.5);
  EXPECT_DOUBLE_EQ(n.param_l2, 10);
  EXPECT_DOUBLE_EQ(n.grad_param_ratio, 0.05);
  EXPECT_DOUBLE_EQ(n.out_grad_l2, 0.25);
}

TEST(Rules, OutOfOrderOrNegativeStepsAreErrors) {
  ReportBuilder b;
  b.add(rec(5, "fc", Site::kParamGrad, summary(1)));
  EXPECT_THROW(b.add(rec(4, "fc", Site::kParamGrad, summary(1))), Error);
  EXPECT_THROW(b.add(rec(-1, "x", Site::kParamGrad, summary(1))), Error);
}

TEST(Rules, InvalidThresholdsAreRejected) {
  Thresholds t;
  t.dead_frac = 2;
  EXPECT_THROW(ReportBuilder{t}, Error);
}

TEST(Report, AssertHealthyNamesFlaggedNodesWorstFirst) {
  Stats nan = summary(1);
  nan.nan = 1;
  nan.count += 1;
  const Report r = build_report({rec(0, "healthy", Site::kParamGrad, summary(1)),
                                 rec(0, "dead", Site::kActivation, summary(1, 10, 10)),
                                 rec(0, "vanish", Site::kParamGrad, summary(1e-12)),
                                 rec(3, "nan_late", Site::kParamGrad, nan),
                                 rec(1, "nan_early", Site::kParamGrad, nan)});
  std::vector<std::string> order;
  for (const NodeReport* n : r.flagged_worst_first()) order.push_back(n->node);
  EXPECT_EQ(order, (std::vector<std::string>{"nan_early", "nan_late", "dead", "vanish"}));
  try {
    assert_healthy(r);
    FAIL() << "expected HealthError";
  } catch (const HealthError& e) {
    EXPECT_STREQ(e.what(),
                 "4 unhealthy nodes: nan_early [NAN] nan_late [NAN] dead [DEAD] vanish [VANISHING]");
  }
  EXPECT_NO_THROW(assert_healthy(build_report({rec(0, "ok", Site::kParamGrad, summary(1))})));
}

TEST(Report, StepsCountDistinctStepsOverNodes) {
  const Report r = build_report({rec(0, "a", Site::kParamGrad, summary(1)),
                                 rec(0, "b", Site::kParamGrad, summary(1)),
                                 rec(2, "a", Site::kParamGrad, summary(1))});
  EXPECT_EQ(r.steps, 2);
}

// The step count is kept in O(1): exact in step order and node by node when the first node has
// every step; a step below those seen, found only by a later node, is the documented miss.
TEST(Report, StepsCountedAsTheLatestStepRises) {
  std::vector<Record> node_major;
  for (const char* node : {"a", "b"})
    for (int64_t step = 0; step < 5; ++step) node_major.push_back(rec(step, node, Site::kParamGrad, summary(1)));
  EXPECT_EQ(build_report(node_major).steps, 5);
  const Report later_beyond = build_report({rec(0, "a", Site::kParamGrad, summary(1)),
                                            rec(1, "a", Site::kParamGrad, summary(1)),
                                            rec(7, "b", Site::kParamGrad, summary(1))});
  EXPECT_EQ(later_beyond.steps, 3);
  const Report gap_filled_late = build_report({rec(0, "a", Site::kParamGrad, summary(1)),
                                               rec(2, "a", Site::kParamGrad, summary(1)),
                                               rec(1, "b", Site::kParamGrad, summary(1))});
  EXPECT_EQ(gap_filled_late.steps, 2);  // step 1 is not counted (core/audit/rules.h)
  EXPECT_EQ(gap_filled_late.nodes.at(1).steps, 1);
}

TEST(Report, BuildInOrderPutsNamedNodesFirstAndDeclaresUnseenOnes) {
  Stats nan = summary(1);
  nan.nan = 1;
  nan.count += 1;
  ReportBuilder b;
  b.add(rec(0, "late", Site::kActivation, nan));  // NaN in both at step 0
  b.add(rec(0, "early", Site::kActivation, nan));
  b.add(rec(0, "other", Site::kParamGrad, summary(1)));
  const Report first_seen = b.build();
  EXPECT_EQ(first_seen.nonfinite_origin.node, "late");
  const Report r = b.build({"early", "never", "late"});
  std::vector<std::string> names;
  for (const NodeReport& n : r.nodes) names.push_back(n.node);
  EXPECT_EQ(names, (std::vector<std::string>{"early", "never", "late", "other"}));
  EXPECT_EQ(r.nonfinite_origin.node, "early");  // the first in execution order
  EXPECT_TRUE(r.nodes[1].flags.contains(Flag::kNoData));
  EXPECT_EQ(r.steps, 1);
}

}  // namespace
}  // namespace gradscope

namespace gradscope {
namespace {

TEST(Report, VerdictNodesLeaveOutSubmodulesOfNodesInTheReport) {
  Report r;
  for (const char* id : {"enc", "enc/fc1", "enc/fc1.inner/x", "head", "orphan/sub", "a/b"}) {
    NodeReport n;
    n.node = id;
    r.nodes.push_back(n);
  }
  NodeReport a;
  a.node = "a";
  r.nodes.push_back(a);
  std::vector<std::string> ids;
  for (const NodeReport* n : r.verdict_nodes()) ids.push_back(n->node);
  // "orphan/sub" has no node "orphan" in the report: it is counted itself.
  EXPECT_EQ(ids, (std::vector<std::string>{"enc", "head", "orphan/sub", "a"}));
}

}  // namespace
}  // namespace gradscope
