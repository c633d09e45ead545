#include "gradscope/tensorboard/step_scalars.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

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
