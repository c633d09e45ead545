// DEPTH_GRADIENT_IMBALANCE on planted stacks: the first block's gradient far below the last's
// while the loss stays flat is flagged on the first block's nodes, from the step the run of
// depth_window steps began; a falling loss, a smaller ratio, a shorter run, two blocks, no loss
// or a divergence are not. The ratios and loss levels are set here, so the expected values are
// known without the code under test.
#include "gradscope/core/audit/depth.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <string>

#include "../common/grad_record.h"
#include "gradscope/core/audit/rules.h"
#include "gradscope/core/series/rules.h"

namespace gradscope {
namespace {

using test::grad_record;

// A stack of `blocks` blocks (blocks.i.attn, blocks.i.mlp, and blocks.i.attn/qkv inside attn)
// and a head, for `steps` steps. Block i's gradient L2 is 0.1 x ratio(step)^(-(last - i)/last):
// the last block 0.1, the first 0.1 / ratio(step). attn and mlp share it equally.
// With `update` > 0, every node also has parameters of L2 1 that move by `update` a step; with
// `dead_first`, block 0's attention outputs only zeros.
Report stack(int blocks, int64_t steps, const std::function<double(int64_t)>& ratio,
             const std::function<double(int64_t)>& loss, double update = 0, bool dead_first = false) {
  ReportBuilder b;
  const auto add = [&](int64_t step, const std::string& node, double g) {
    b.add(grad_record(step, node, g));
    if (update <= 0) return;
    Record param = grad_record(step, node, 1.0), moved = grad_record(step, node, update);
    param.site = Site::kParam;
    moved.site = Site::kUpdate;
    b.add(param);
    b.add(moved);
  };
  for (int64_t step = 0; step < steps; ++step) {
    for (int i = 0; i < blocks; ++i) {
      const double share = static_cast<double>(blocks - 1 - i) / (blocks - 1);
      const double g = 0.1 * std::pow(ratio(step), -share) / std::sqrt(2.0);
      const std::string block = "blocks." + std::to_string(i);
      add(step, block + ".attn", g);
      if (dead_first && i == 0) {
        Record act{step, block + ".attn", Site::kActivation, {}};
        act.stats.count = act.stats.finite = act.stats.zero = 100;
        b.add(act);
      }
      add(step, block + ".attn/qkv", g * 1e-3);  // inside attn: not counted again
      add(step, block + ".mlp", g);
    }
    add(step, "head", 0.3);
    if (loss) b.add(StepScalar{step, kLossSeries, loss(step)});
  }
  return b.build();
}

double flat(int64_t step) { return 3.21 + 0.02 * std::sin(static_cast<double>(step)); }
double falling(int64_t step) { return 3.21 - 0.7 * static_cast<double>(std::min<int64_t>(step, 150)) / 150; }
double fades_from_10(int64_t step) { return step < 10 ? 3.0 : 2000.0; }

bool flagged(const Report& r) {
  for (const NodeReport& n : r.nodes)
    if (n.flags.contains(Flag::kDepthGradientImbalance)) return true;
  return false;
}

const Evidence* depth_evidence(const NodeReport& n) {
  for (const Evidence& e : n.evidence)
    if (e.flag == Flag::kDepthGradientImbalance) return &e;
  return nullptr;
}

TEST(DepthGradient, AStalledStackWhoseFirstBlockFadesIsFlaggedOnItsFirstBlock) {
  const Report r = stack(6, 200, fades_from_10, flat);
  for (const NodeReport& n : r.nodes) {
    SCOPED_TRACE(n.node);
    const bool first_block = n.node == "blocks.0.attn" || n.node == "blocks.0.mlp";
    EXPECT_EQ(n.flags.contains(Flag::kDepthGradientImbalance), first_block);
    if (!first_block) continue;
    const Evidence* e = depth_evidence(n);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->first_step, 10);            // the first run of 20 steps above 100x starts there
    EXPECT_NEAR(e->value, 2000.0, 1e-6);     // the planted ratio
    EXPECT_DOUBLE_EQ(e->threshold, 100.0);
    EXPECT_NE(e->detail.find("blocks.5's gradient L2 over 100 x blocks.0's"), std::string::npos) << e->detail;
    EXPECT_NE(e->detail.find("(6 blocks)"), std::string::npos) << e->detail;
  }
  // The stall that was judged: the lowest mean of 10 of the first 30 losses, the last 20's mean.
  double lowest = INFINITY, late = 0;
  for (int64_t i = 0; i + 10 <= 30; ++i) {
    double m = 0;
    for (int64_t j = i; j < i + 10; ++j) m += flat(j) / 10;
    lowest = std::min(lowest, m);
  }
  for (int64_t j = 180; j < 200; ++j) late += flat(j) / 20;
  EXPECT_NEAR(r.series.early_loss_level, lowest, 1e-12);
  EXPECT_NEAR(r.series.late_loss_mean, late, 1e-12);
  EXPECT_TRUE(r.series.loss_stalled(0.05));
}

TEST(DepthGradient, AStackWhoseLossFallsIsNotFlaggedWhateverItsProfile) {
  const Report r = stack(6, 200, fades_from_10, falling);
  EXPECT_FALSE(r.series.loss_stalled(0.05));
  for (const NodeReport& n : r.nodes) EXPECT_FALSE(n.flags.contains(Flag::kDepthGradientImbalance)) << n.node;
}

TEST(DepthGradient, NeitherASmallerRatioNorAShorterRunNorTwoBlocksNorNoLossIsFlagged) {
  // 45x: the most a healthy post-LN run with warm-up reached (docs/attention.md).
  EXPECT_FALSE(flagged(stack(6, 200, [](int64_t) { return 45.0; }, flat)));
  // 2000x, but one step in every 19 back to 1x: never 20 steps in a row.
  EXPECT_FALSE(flagged(stack(6, 200, [](int64_t s) { return s % 19 == 0 ? 1.0 : 2000.0; }, flat)));
  EXPECT_TRUE(flagged(stack(6, 200, [](int64_t s) { return s % 21 == 0 ? 1.0 : 2000.0; }, flat)));
  EXPECT_FALSE(flagged(stack(2, 200, fades_from_10, flat)));
  EXPECT_TRUE(flagged(stack(3, 200, fades_from_10, flat)));
  EXPECT_FALSE(flagged(stack(6, 200, fades_from_10, nullptr)));
  // 49 losses: too few to know whether it fell (30 early + 20 late needed).
  EXPECT_FALSE(flagged(stack(6, 49, fades_from_10, flat)));
  EXPECT_TRUE(flagged(stack(6, 50, fades_from_10, flat)));
  // A divergence is the headline, not the profile it leaves.
  EXPECT_FALSE(flagged(stack(6, 200, fades_from_10, [](int64_t s) { return s < 100 ? flat(s) : NAN; })));
}

TEST(DepthGradient, AFirstBlockThatIsAlreadyDeadIsNamedByThatFlagAlone) {
  // The planted stall and profile, and block 0's attention outputs all zero: DEAD says why its
  // gradient is small.
  const Report r = stack(6, 200, fades_from_10, flat, 0, /*dead_first=*/true);
  for (const NodeReport& n : r.nodes) {
    EXPECT_FALSE(n.flags.contains(Flag::kDepthGradientImbalance)) << n.node;
    if (n.node == "blocks.0.attn") {
      EXPECT_TRUE(n.flags.contains(Flag::kDead));
    }
  }
}

TEST(DepthGradient, AProfileSteepFromTheFirstStepIsTheArchitecturesNotAFailure) {
  // 1,900x at the first step already (a deep tanh MLP at initialisation): a stall there has
  // other causes, so the profile is not judged; the same profile reached after 10 steps is.
  EXPECT_FALSE(flagged(stack(6, 200, [](int64_t) { return 1900.0; }, flat)));
  EXPECT_FALSE(flagged(stack(6, 200, [](int64_t s) { return s < 10 ? 10.5 : 2000.0; }, flat)));  // not below 10
  EXPECT_TRUE(flagged(stack(6, 200, [](int64_t s) { return s < 10 ? 9.5 : 2000.0; }, flat)));
}

TEST(DepthGradient, AStackWhoseParametersDoNotMoveIsNamedStagnantNotImbalanced) {
  // Updates 1e-8 of the parameters (a learning rate far too small): the loss cannot fall, and
  // STAGNANT names why; the depth profile is not the cause.
  const Report r = stack(6, 200, fades_from_10, flat, 1e-8);
  for (const NodeReport& n : r.nodes) {
    EXPECT_FALSE(n.flags.contains(Flag::kDepthGradientImbalance)) << n.node;
    EXPECT_TRUE(n.flags.contains(Flag::kStagnant)) << n.node;
  }
  // Updates 1e-3 (moving): the profile is named again.
  EXPECT_TRUE(flagged(stack(6, 200, fades_from_10, flat, 1e-3)));
}

TEST(DepthGradient, DefaultNodeNamesAndSeveralStacksAreRead) {
  // Default node names (a ModuleList as blocks/0, blocks/1 ...), and an encoder stack that is
  // fine beside a decoder stack that fades: the decoder's first block is named.
  ReportBuilder b;
  for (int64_t step = 0; step < 100; ++step) {
    for (int i = 0; i < 4; ++i) {
      b.add(grad_record(step, "encoder/layers/" + std::to_string(i), 0.1));
      b.add(grad_record(step, "decoder/layers/" + std::to_string(i), i == 0 && step >= 5 ? 1e-5 : 0.1));
      b.add(grad_record(step, "decoder/layers/" + std::to_string(i) + "/ff", 1e-6));  // inside
    }
    b.add(StepScalar{step, kLossSeries, flat(step)});
  }
  const Report r = b.build();
  for (const NodeReport& n : r.nodes)
    EXPECT_EQ(n.flags.contains(Flag::kDepthGradientImbalance), n.node == "decoder/layers/0") << n.node;
}

}  // namespace
}  // namespace gradscope
