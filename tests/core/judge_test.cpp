// The rules added for module audits: FROZEN, STAGNANT, channels, LEAKAGE, where NaN started,
// and the roll-up of submodule flags.
#include <gtest/gtest.h>

#include <set>

#include <cmath>

#include "gradscope/core/error.h"
#include "gradscope/core/audit/rules.h"
#include "../common/stats_fixture.h"

namespace gradscope {
namespace {

Stats summary(double l2, int64_t count = 100, int64_t zeros = 0) { return test::with_l2(l2, count, zeros); }

Stats with_nan(Stats s) {
  s.nan = 1;
  s.count += 1;
  return s;
}

const NodeReport& find(const Report& r, const std::string& node) {
  for (const NodeReport& n : r.nodes)
    if (n.node == node) return n;
  throw std::runtime_error("no node " + node);
}

TEST(Judge, FrozenParametersAreFrozenNotNoData) {
  ReportBuilder b;
  b.add({0, "frozen", Site::kFrozenParam, summary(3)});
  b.add({0, "detached", Site::kParam, summary(3)});
  b.add({0, "detached", Site::kActivation, summary(1)});
  b.add({0, "unused", Site::kParam, summary(3)});  // never ran: no activation, no gradient
  const Report r = b.build();
  EXPECT_EQ(find(r, "frozen").flags.join(), "FROZEN");
  EXPECT_EQ(find(r, "frozen").evidence[0].detail, "parameters do not require gradients");
  EXPECT_DOUBLE_EQ(find(r, "frozen").param_l2, 3);
  EXPECT_EQ(find(r, "detached").flags.join(), "FROZEN");
  EXPECT_EQ(find(r, "unused").flags.join(), "NO_DATA");
}

TEST(Judge, StagnantNeedsConsecutiveStepsBelowTheRatio) {
  Thresholds t;
  t.stagnant_steps = 3;
  t.update_ratio_lo = 1e-3;
  auto run = [&](const std::vector<double>& ratios) {
    ReportBuilder b(t);
    for (std::size_t s = 0; s < ratios.size(); ++s) {
      b.add({static_cast<int64_t>(s), "fc", Site::kParamGrad, summary(1)});
      b.add({static_cast<int64_t>(s), "fc", Site::kParam, summary(10)});
      b.add({static_cast<int64_t>(s), "fc", Site::kUpdate, summary(10 * ratios[s])});
    }
    return b.build().nodes.at(0);
  };
  // Two below, one above, two below: never three in a row.
  EXPECT_EQ(run({1e-4, 1e-4, 1e-2, 1e-4, 1e-4}).flags.join(), "HEALTHY");
  // Exactly at the threshold is not below it.
  EXPECT_EQ(run({1e-3, 1e-3, 1e-3}).flags.join(), "HEALTHY");
  const NodeReport n = run({1e-2, 1e-4, 2e-4, 5e-5, 1e-4});
  ASSERT_EQ(n.flags.join(), "STAGNANT");
  EXPECT_EQ(n.evidence[0].first_step, 1);
  EXPECT_NEAR(n.evidence[0].value, 2e-4, 1e-15);  // largest ratio in the first 3-step run
  EXPECT_EQ(n.evidence[0].detail, "longest run 4 steps");
  EXPECT_NEAR(n.update_ratio, (1e-2 + 1e-4 + 2e-4 + 5e-5 + 1e-4) / 5, 1e-15);
}

// A step whose update or parameter holds a NaN or Inf has no update ratio: the L2 of its
// finite part would read as a tiny update, and a run that blew up would also be called
// STAGNANT, an after-effect named as a cause. TensorBoard's per-step flag agrees
// (StepScalars.NaNAndInfAreShownNotHidden).
TEST(Judge, ANonFiniteUpdateIsNoStagnantStep) {
  Thresholds t;
  t.stagnant_steps = 3;
  ReportBuilder b(t);
  Stats all_nan;
  all_nan.count = all_nan.nan = 100;
  for (int64_t s = 0; s < 6; ++s) {
    b.add({s, "fc", Site::kParamGrad, summary(1)});
    b.add({s, "fc", Site::kParam, s < 3 ? summary(10) : with_nan(summary(10))});
    b.add({s, "fc", Site::kUpdate, s < 3 ? all_nan : summary(1e-6)});
  }
  const NodeReport n = b.build().nodes.at(0);
  EXPECT_EQ(n.flags.join(), "NAN");
  EXPECT_EQ(n.evidence.at(0).first_step, 0);
}

TEST(Judge, SaturatedOnThePreActivation) {
  Stats pre = summary(1, 100);
  pre.saturated = 80;  // |z| > 50 before tanh; the tanh output itself never exceeds 1
  ReportBuilder b;
  b.add({0, "fc", Site::kActivation, summary(1, 100)});
  b.add({0, "fc", Site::kPreActivation, pre});
  const NodeReport n = b.build().nodes.at(0);
  ASSERT_EQ(n.flags.join(), "SATURATED");
  EXPECT_EQ(n.evidence[0].site, Site::kPreActivation);
  EXPECT_DOUBLE_EQ(n.evidence[0].value, 0.8);
}

TEST(Judge, DeadChannelsOnlyWhenTheNodeIsNotDead) {
  ChannelRecord c{0, "conv", {}, {}, 5.5};
  for (int i = 0; i < 6; ++i) c.activation.push_back(summary(1, 100, i < 2 ? 96 : 10));
  ReportBuilder b;
  b.add({0, "conv", Site::kActivation, summary(1, 600, 2 * 96 + 4 * 10)});
  b.add(c);
  const NodeReport n = b.build().nodes.at(0);
  EXPECT_EQ(n.flags_label(), "DEAD_CHANNELS(2)");
  EXPECT_EQ(n.dead_channels, 2);
  EXPECT_EQ(n.channels, 6);
  EXPECT_DOUBLE_EQ(n.effective_rank, 5.5);
  EXPECT_EQ(n.evidence[0].detail, "channels 0, 1 (of 6)");

  ReportBuilder dead;
  dead.add({0, "conv", Site::kActivation, summary(1, 600, 590)});
  ChannelRecord all{0, "conv", std::vector<Stats>(6, summary(1, 100, 99)), {}, NAN};
  dead.add(all);
  EXPECT_EQ(dead.build().nodes.at(0).flags.join(), "DEAD");
}

TEST(Judge, ChannelFlagsNeedMoreThanChannelFrac) {
  // 1 dead channel of 5 is exactly channel_frac (0.2): not flagged; 2 of 5 is.
  for (int dead : {1, 2}) {
    ChannelRecord c{0, "fc", {}, {}, NAN};
    for (int i = 0; i < 5; ++i) c.activation.push_back(summary(1, 100, i < dead ? 100 : 0));
    ReportBuilder b;
    b.add({0, "fc", Site::kActivation, summary(1, 500, 100 * dead)});
    b.add(c);
    EXPECT_EQ(b.build().nodes.at(0).flags_label(), dead == 1 ? "HEALTHY" : "DEAD_CHANNELS(2)");
  }
}

TEST(Judge, IgnoredChannelsAreLiveWithZeroGradient) {
  ChannelRecord c{0, "fc", {}, {}, NAN};
  for (int i = 0; i < 4; ++i) {
    c.activation.push_back(summary(1, 100, 0));
    c.output_grad.push_back(summary(i == 3 ? 9.9e-4 : 1.0, 100));  // just below 1e-3 x median
  }
  ReportBuilder b;
  b.add(c);
  b.add({0, "fc", Site::kActivation, summary(1, 400)});
  EXPECT_EQ(b.build().nodes.at(0).flags_label(), "IGNORED_CHANNELS(1)");
  // Every channel equally small: that is the node's gradient (VANISHING), not ignored channels.
  ChannelRecord tiny{0, "g", std::vector<Stats>(4, summary(1, 100)), std::vector<Stats>(4, summary(1e-12, 100)), NAN};
  ReportBuilder b2;
  b2.add(tiny);
  b2.add({0, "g", Site::kActivation, summary(1, 400)});
  EXPECT_EQ(b2.build().nodes.at(0).flags_label(), "HEALTHY");
}

TEST(Judge, ChannelCountsMustAgree) {
  ReportBuilder b;
  b.add(ChannelRecord{0, "fc", std::vector<Stats>(4), {}, NAN});
  EXPECT_THROW(b.add(ChannelRecord{1, "fc", std::vector<Stats>(5), {}, NAN}), Error);
}

TEST(Judge, LeakageComparesTheMeanCkaToTheThreshold) {
  ReportBuilder b;
  b.add({0, "a", Site::kActivation, summary(1)});
  b.add(SimilarityRecord{0, "a", "b", 0.90});
  b.add(SimilarityRecord{1, "a", "b", 0.99});
  b.add(SimilarityRecord{2, "a", "b", 0.99});  // mean 0.96 > 0.95
  b.add({0, "c", Site::kActivation, summary(1)});
  b.add(SimilarityRecord{0, "c", "d", 0.95});  // equal: not leakage
  const Report r = b.build();
  const NodeReport& a = find(r, "a");
  ASSERT_EQ(a.flags.join(), "LEAKAGE");
  EXPECT_NEAR(a.evidence[0].value, 0.96, 1e-12);
  EXPECT_EQ(a.evidence[0].first_step, 1);
  EXPECT_EQ(a.evidence[0].detail, "with b");
  EXPECT_EQ(find(r, "c").flags.join(), "HEALTHY");
}

TEST(Judge, OriginInForwardIsTheFirstNodeInExecutionOrder) {
  ReportBuilder b;
  for (const char* n : {"embed", "block1", "block2", "head"}) b.declare(n);
  b.add({0, "block1", Site::kActivation, summary(1)});
  b.add({3, "head", Site::kActivation, with_nan(summary(1))});  // recorded first, runs later
  b.add({3, "block2", Site::kActivation, with_nan(summary(1))});
  b.add({3, "block1", Site::kParamGrad, with_nan(summary(1))});
  const NonFiniteOrigin o = b.build().nonfinite_origin;
  EXPECT_EQ(o.step, 3);
  EXPECT_EQ(o.node, "block2");
  EXPECT_EQ(o.phase, "forward");
}

TEST(Judge, OriginInBackwardIsTheLastNodeReached) {
  ReportBuilder b;
  for (const char* n : {"a", "b", "c"}) b.declare(n);
  for (const char* n : {"a", "b", "c"}) b.add({5, n, Site::kActivation, summary(1)});
  b.add({5, "a", Site::kOutputGrad, with_nan(summary(1))});
  b.add({5, "b", Site::kParamGrad, with_nan(summary(1))});
  b.add({5, "c", Site::kOutputGrad, summary(1)});
  const NonFiniteOrigin o = b.build().nonfinite_origin;
  EXPECT_EQ(o.node, "b");
  EXPECT_EQ(o.phase, "backward");
  EXPECT_EQ(o.site, Site::kParamGrad);
  EXPECT_FALSE(build_report({{0, "x", Site::kParamGrad, summary(1)}}).nonfinite_origin.found());
}

TEST(Judge, SubmoduleFlagsRollUpOncePerFlag) {
  ReportBuilder b;
  b.declare("encoder");
  b.declare("encoder/backbone.0");
  b.declare("encoder/backbone.0/attn");
  b.add({0, "encoder", Site::kParamGrad, summary(1)});
  b.add({0, "encoder/backbone.0", Site::kParamGrad, summary(1e-9)});
  b.add({2, "encoder/backbone.3", Site::kParamGrad, summary(1e-9)});
  b.add({1, "encoder/backbone.0/attn", Site::kActivation, summary(1, 100, 99)});
  const Report r = b.build();
  const NodeReport& enc = find(r, "encoder");
  EXPECT_EQ(enc.flags.join(), "VANISHING,DEAD");
  ASSERT_EQ(enc.evidence.size(), 2u);
  // Flags are listed in enum order; the evidence says where and since when.
  for (const Evidence& e : enc.evidence) {
    if (e.flag == Flag::kVanishing) {
      EXPECT_EQ(e.detail, "in: backbone.0, backbone.3");
      EXPECT_EQ(e.first_step, 0);
      EXPECT_EQ(e.value, 2);
    } else {
      EXPECT_EQ(e.detail, "in: backbone.0");  // climbed two levels via backbone.0
    }
  }
  EXPECT_EQ(find(r, "encoder/backbone.0").flags.join(), "VANISHING,DEAD");
}

TEST(Judge, EmbeddingRowsGradientIsTheTablesParameterGradient) {
  // EmbeddingTracker records the touched rows' gradient and update, no param_grad: the table is
  // judged on those rows (the rest of its gradient is zero), never NO_DATA.
  ReportBuilder b;
  for (int64_t step = 0; step < 3; ++step) {
    b.add(Record{step, "item", Site::kEmbeddingRows, test::with_l2(0.25)});
    b.add(Record{step, "item", Site::kUpdate, test::with_l2(0.01)});
    b.add(Record{step, "cold", Site::kEmbeddingRows, test::with_l2(1e-9)});
  }
  const Report r = b.build();
  ASSERT_EQ(r.nodes.size(), 2u);
  EXPECT_EQ(r.nodes[0].flags.join(), "HEALTHY");
  EXPECT_DOUBLE_EQ(r.nodes[0].param_grad_l2, 0.25);
  EXPECT_EQ(r.nodes[1].flags.join(), "VANISHING");
  EXPECT_EQ(r.nodes[1].evidence[0].site, Site::kEmbeddingRows);
  // A node audited as a module too keeps its full parameter gradient.
  ReportBuilder both;
  both.add(Record{0, "emb", Site::kParamGrad, test::with_l2(2.0)});
  both.add(Record{0, "emb", Site::kEmbeddingRows, test::with_l2(5.0)});
  EXPECT_DOUBLE_EQ(both.build().nodes[0].param_grad_l2, 2.0);
}

TEST(FlagAdvice, EveryFlagButHealthyHasAdviceOfItsOwn) {
  EXPECT_STREQ(flag_advice(Flag::kHealthy), "");
  std::set<std::string> seen;
  for (int i = 1; i < kFlagCount; ++i) {
    const std::string advice = flag_advice(static_cast<Flag>(i));
    EXPECT_GT(advice.size(), 20u) << flag_name(static_cast<Flag>(i));
    EXPECT_TRUE(seen.insert(advice).second) << "advice repeated for " << flag_name(static_cast<Flag>(i));
  }
}

}  // namespace
}  // namespace gradscope
