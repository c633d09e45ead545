#include "gradscope/tensorboard/step_scalars.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "../common/stats_fixture.h"
#include "gradscope/core/audit/rules.h"

namespace gradscope::tensorboard {
namespace {

Stats stats_of(const std::vector<float>& v) {
  return compute(
      TensorView::contiguous(v.data(), DType::kFloat32, {static_cast<int64_t>(v.size())}));
}

std::map<std::string, double> scalars(const StepSummary& s) {
  std::map<std::string, double> out;
  for (const auto& v : s.values()) {
    if (v.kind == StepSummary::Kind::kScalar) {
      EXPECT_TRUE(out.emplace(v.tag, v.scalar).second) << v.tag;
    }
  }
  return out;
}

TEST(StepScalars, RecordsOfOneNodeAndSiteMerge) {
  StepScalars sc({});
  StepSummary s;
  sc.add({{0, "fc", Site::kParamGrad, stats_of({3})}, {0, "fc", Site::kParamGrad, stats_of({4})}},
         s);
  EXPECT_EQ(scalars(s).at("grad_l2/fc"), 5.0);  // sqrt(9 + 16), as one tensor
}

TEST(StepScalars, GradientSitePreferenceFollowsTheRules) {
  StepScalars sc({});
  StepSummary s;
  sc.add(
      {{0, "fc", Site::kOutputGrad, stats_of({100})}, {0, "fc", Site::kParamGrad, stats_of({1})}},
      s);
  EXPECT_EQ(scalars(s).at("grad_l2/fc"), 1.0);  // param_grad before output_grad
}

TEST(StepScalars, NaNAndInfAreShownNotHidden) {
  StepScalars sc({});
  StepSummary s;
  sc.add({{0, "a", Site::kParamGrad, stats_of({1, NAN})},
          {0, "b", Site::kParamGrad, stats_of({1, INFINITY})},
          {0, "a", Site::kParam, stats_of({1})},
          {0, "a", Site::kUpdate, stats_of({NAN})}},
         s);
  const auto m = scalars(s);
  EXPECT_TRUE(std::isnan(m.at("grad_l2/a")));
  EXPECT_EQ(m.at("grad_l2/b"), INFINITY);
  EXPECT_TRUE(std::isnan(m.at("update_ratio/a")));
  EXPECT_EQ(m.at("flag/NAN/a"), 1);
  EXPECT_EQ(m.at("flag/INF/b"), 1);
  EXPECT_EQ(m.at("flag/NAN/b"), 0);
  EXPECT_EQ(m.count("flag/STAGNANT/a"), 0u);  // no ratio, no verdict on it
}

TEST(StepScalars, StagnantNeedsConsecutiveLowUpdateSteps) {
  Thresholds t;
  t.stagnant_steps = 3;
  StepScalars sc(t);
  std::vector<double> flags;
  for (int step = 0; step < 6; ++step) {
    const float update = step == 3 ? 1.0f : 1e-9f;  // step 3 breaks the run
    StepSummary s;
    sc.add({{step, "fc", Site::kParam, stats_of({1})},
            {step, "fc", Site::kUpdate, stats_of({update})}},
           s);
    flags.push_back(scalars(s).at("flag/STAGNANT/fc"));
  }
  EXPECT_EQ(flags, (std::vector<double>{0, 0, 1, 0, 0, 0}));
}

// One record stream into the report and into TensorBoard's per-step flags: each flag the report
// raises from a per-step test shows 1 in TensorBoard first at the step its evidence names (for
// STAGNANT, at the step its run of low-ratio steps became long enough), and TensorBoard shows
// no flag the report does not raise. Both read core's per-step judgement (step_judgement.h).
TEST(StepScalars, PerStepFlagsAreTheReportsFlags) {
  Thresholds t;
  t.stagnant_steps = 4;
  ReportBuilder builder(t);
  StepScalars sc(t);
  constexpr int64_t kSteps = 12;
  std::map<std::string, int64_t> tb_first;  // "FLAG/node" -> first step at 1
  Stats nan_grad, inf_grad;
  nan_grad.count = nan_grad.nan = 4;
  inf_grad.count = inf_grad.pos_inf = 4;
  for (int64_t step = 0; step < kSteps; ++step) {
    const std::vector<Record> records = {
        {step, "healthy", Site::kParamGrad, test::with_l2(1)},
        {step, "healthy", Site::kActivation, test::with_l2(5, 100, 10, 1)},
        {step, "healthy", Site::kParam, test::with_l2(10)},
        {step, "healthy", Site::kUpdate, test::with_l2(0.01)},
        // The report judges VANISHING and EXPLODING on the run's mean gradient L2 and names the
        // first step past the threshold: these cross from steps 4 and 6, and their means do too.
        {step, "vanishing", Site::kParamGrad, test::with_l2(step >= 4 ? 1e-9 : 2e-7)},
        {step, "exploding", Site::kParamGrad, test::with_l2(step >= 6 ? 1e4 : 1)},
        {step, "dead", Site::kActivation, test::with_l2(step >= 3 ? 0 : 5, 100, step >= 3 ? 100 : 0)},
        {step, "saturated", Site::kPreActivation, test::with_l2(5, 100, 0, step >= 5 ? 90 : 0)},
        {step, "nan", Site::kParamGrad, step == 7 ? nan_grad : test::with_l2(1)},
        {step, "inf", Site::kParamGrad, step == 8 ? inf_grad : test::with_l2(1)},
        {step, "stagnant", Site::kParam, test::with_l2(10)},
        {step, "stagnant", Site::kUpdate, test::with_l2(step >= 2 ? 1e-8 : 0.01)}};
    for (const Record& r : records) builder.add(r);
    StepSummary summary;
    sc.add(records, summary);
    for (const auto& [tag, value] : scalars(summary))
      if (tag.rfind("flag/", 0) == 0 && value == 1.0) tb_first.emplace(tag.substr(5), step);
  }
  const Report report = builder.build();
  const std::set<Flag> per_step = {Flag::kVanishing, Flag::kExploding, Flag::kDead, Flag::kSaturated,
                                   Flag::kNaN,       Flag::kInf,       Flag::kStagnant};
  std::map<std::string, int64_t> report_first;
  for (const NodeReport& n : report.nodes)
    for (const Evidence& e : n.evidence)
      if (per_step.count(e.flag)) {
        const int64_t shown = e.flag == Flag::kStagnant ? e.first_step + t.stagnant_steps - 1 : e.first_step;
        report_first.emplace(std::string(flag_name(e.flag)) + "/" + n.node, shown);
      }
  EXPECT_EQ(tb_first, report_first);
  // Each planted node carries its flag from where it was planted.
  EXPECT_EQ(report_first, (std::map<std::string, int64_t>{{"VANISHING/vanishing", 4},
                                                          {"EXPLODING/exploding", 6},
                                                          {"DEAD/dead", 3},
                                                          {"SATURATED/saturated", 5},
                                                          {"NAN/nan", 7},
                                                          {"INF/inf", 8},
                                                          {"STAGNANT/stagnant", 5}}));
}

TEST(StepScalars, AttentionScalarsPerNodeAndHead) {
  // Head 0: 4 queries, 3 seeing two keys or more, 1 on one key; head 1: nothing counted.
  HeadStats h0;
  h0.queries = 4;
  h0.fraction_queries = 3;
  h0.max_logit = 250;
  h0.entropy_fraction_sum = 0.75;
  h0.top_queries = 1;
  StepSummary s;
  add_attention_scalars({AttentionRecord{10, "blocks.0.attn", {h0, HeadStats{}}}}, s);
  EXPECT_EQ(scalars(s), (std::map<std::string, double>{{"attention_max_logit/blocks.0.attn/head0", 250},
                                                       {"attention_entropy_fraction/blocks.0.attn/head0", 0.25},
                                                       {"attention_top_key_frac/blocks.0.attn/head0", 0.25}}));
}

TEST(StepScalars, ChannelHistogramsCountFiniteChannelsOnly) {
  ChannelRecord c;
  c.node = "conv";
  c.step = 4;
  c.activation = {stats_of({1, 3}), stats_of({NAN}), stats_of({-2})};
  StepSummary s;
  add_channel_histograms(c, s);
  ASSERT_EQ(s.values().size(), 2u);  // no gradient channels, no effective rank
  EXPECT_EQ(s.values()[0].tag, "channel_activation_mean/conv");
  EXPECT_EQ(s.values()[0].histogram.num, 2);
  EXPECT_EQ(s.values()[0].histogram.sum, 0);  // means 2 and -2
  EXPECT_EQ(s.values()[1].tag, "channel_activation_mean_nonfinite/conv");
  EXPECT_EQ(s.values()[1].scalar, 1);
}

TEST(StepScalars, ReportMarkdownIndentsEveryLine) {
  EXPECT_EQ(report_markdown("a  b\n\nc\n"), "    a  b\n    \n    c\n");
  EXPECT_EQ(report_markdown("no newline"), "    no newline");
  EXPECT_EQ(report_markdown(""), "");
}

}  // namespace
}  // namespace gradscope::tensorboard
