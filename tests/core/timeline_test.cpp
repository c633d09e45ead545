// Frames, flow intensity, the rolling window, and health classification at its boundaries.
#include "gradscope/core/audit/timeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "gradscope/core/error.h"
#include "../common/stats_fixture.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;

// `count` finite values with L2 norm exactly `l2`, mean |x| = l2 / count, max |x| = l2.
// A gradient with norm `l2`; a NaN norm is a gradient of NaN elements, as measured (Stats
// counts them apart from the finite ones).
Stats grad(double l2, int64_t count = 4) {
  if (!std::isnan(l2)) return test::with_l2(l2, count);
  Stats s;
  s.count = s.nan = count;
  return s;
}

Record rec(int64_t step, const std::string& node, Stats s, Site site = Site::kParamGrad) {
  return Record{step, node, site, s};
}

TEST(Timeline, FrameHoldsPerNodeMeasuresAndIntensityRelativeToTheLargestNorm) {
  Timeline tl;
  tl.add(rec(0, "a", grad(2.0)));
  tl.add(rec(0, "b", grad(8.0)));
  tl.add(rec(0, "c", grad(0.0)));
  tl.add(rec(0, "b", grad(99.0), Site::kParam));  // not a gradient: ignored
  tl.finish();
  ASSERT_EQ(tl.frames().size(), 1u);
  const Frame& f = tl.frames()[0];
  EXPECT_EQ(f.step, 0);
  ASSERT_EQ(f.layers.size(), 3u);
  EXPECT_EQ(tl.nodes()[f.layers[0].node], "a");
  EXPECT_DOUBLE_EQ(f.layers[0].grad_norm, 2.0);
  EXPECT_DOUBLE_EQ(f.layers[0].mean_abs_grad, 0.5);
  EXPECT_DOUBLE_EQ(f.layers[0].max_abs_grad, 2.0);
  EXPECT_DOUBLE_EQ(f.layers[0].flow_intensity, 0.25);
  EXPECT_DOUBLE_EQ(f.layers[1].flow_intensity, 1.0);
  EXPECT_DOUBLE_EQ(f.layers[2].flow_intensity, 0.0);
  EXPECT_TRUE(f.layers[2].is_vanishing);  // 0 < grad_lo
  EXPECT_FALSE(f.layers[0].is_vanishing);
  EXPECT_FALSE(f.layers[1].is_exploding);
}

TEST(Timeline, RecordsOfOneStepMergeAndOutputGradsStandInWithoutParameters) {
  Timeline tl;
  tl.add(rec(3, "attn", grad(3.0)));
  tl.add(rec(3, "attn", grad(4.0)));                     // called twice: L2 of both = 5
  tl.add(rec(3, "act", grad(5.0), Site::kOutputGrad));  // no parameters: output grad
  tl.add(rec(4, "attn", grad(1.0)));                     // closes step 3
  ASSERT_EQ(tl.frames().size(), 1u);
  EXPECT_DOUBLE_EQ(tl.frames()[0].layers[0].grad_norm, 5.0);
  EXPECT_DOUBLE_EQ(tl.frames()[0].layers[1].grad_norm, 5.0);
  tl.finish();
  ASSERT_EQ(tl.frames().size(), 2u);
  EXPECT_EQ(tl.frames()[1].step, 4);
  EXPECT_EQ(tl.frames()[1].layers.size(), 1u);
}

TEST(Timeline, FlagsAreStrictAtTheThresholds) {
  Thresholds t;
  Timeline tl(t);
  tl.add(rec(0, "lo", grad(t.grad_lo)));
  tl.add(rec(0, "hi", grad(t.grad_hi)));
  tl.add(rec(0, "below", grad(std::nextafter(t.grad_lo, 0.0))));
  tl.add(rec(0, "above", grad(std::nextafter(t.grad_hi, 1e9))));
  tl.finish();
  const auto& l = tl.frames()[0].layers;
  EXPECT_FALSE(l[0].is_vanishing);
  EXPECT_FALSE(l[1].is_exploding);
  EXPECT_TRUE(l[2].is_vanishing);
  EXPECT_TRUE(l[3].is_exploding);
}

TEST(Timeline, NonFiniteGradientsExplodeAndTakeFullIntensity) {
  Stats nan = grad(1.0);
  nan.count += 1;
  nan.nan = 1;
  Stats inf = grad(1.0);
  inf.count += 1;
  inf.pos_inf = 1;
  Timeline tl;
  tl.add(rec(0, "nan", nan));
  tl.add(rec(0, "inf", inf));
  tl.add(rec(0, "ok", grad(4.0)));
  tl.finish();
  const auto& l = tl.frames()[0].layers;
  EXPECT_TRUE(std::isnan(l[0].grad_norm));
  EXPECT_TRUE(std::isnan(l[0].mean_abs_grad));
  EXPECT_TRUE(l[0].is_exploding);
  EXPECT_EQ(l[1].grad_norm, std::numeric_limits<double>::infinity());
  EXPECT_EQ(l[1].max_abs_grad, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(l[1].is_exploding);
  EXPECT_DOUBLE_EQ(l[0].flow_intensity, 1.0);
  EXPECT_DOUBLE_EQ(l[1].flow_intensity, 1.0);
  EXPECT_DOUBLE_EQ(l[2].flow_intensity, 1.0);  // largest finite norm of the step
}

TEST(Timeline, WindowKeepsTheNewestFramesAndCountsDrops) {
  Timeline tl({}, 3);
  for (int step = 0; step < 10; ++step) tl.add(rec(step, "a", grad(1.0 + step)));
  tl.finish();
  ASSERT_EQ(tl.frames().size(), 3u);
  EXPECT_EQ(tl.frames().front().step, 7);
  EXPECT_EQ(tl.frames().back().step, 9);
  EXPECT_EQ(tl.dropped(), 7);
  EXPECT_DOUBLE_EQ(tl.frames().front().layers[0].grad_norm, 8.0);
}

TEST(Timeline, WindowAtItsBoundaryDropsNothingAndZeroMeansUnlimited) {
  Timeline exact({}, 5), unlimited({}, 0);
  for (int step = 0; step < 5; ++step) {
    exact.add(rec(step, "a", grad(1.0)));
    unlimited.add(rec(step, "a", grad(1.0)));
  }
  exact.finish();
  unlimited.finish();
  EXPECT_EQ(exact.frames().size(), 5u);
  EXPECT_EQ(exact.dropped(), 0);
  exact.add(rec(5, "a", grad(1.0)));
  exact.finish();
  EXPECT_EQ(exact.frames().size(), 5u);
  EXPECT_EQ(exact.frames().front().step, 1);
  for (int step = 5; step < 1000; ++step) unlimited.add(rec(step, "a", grad(1.0)));
  unlimited.finish();
  EXPECT_EQ(unlimited.frames().size(), 1000u);
}

TEST(Timeline, StepGoingBackIsAnError) {
  Timeline tl;
  tl.add(rec(5, "a", grad(1.0)));
  try {
    tl.add(rec(4, "a", grad(1.0)));
    FAIL() << "expected Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("step 4 arrived after step 5"));
  }
}

TEST(FlowHealth, ClassificationAtTheRatioBoundaries) {
  const Thresholds t;  // critical 0.5, problems 0.3, minor 0.1, strict
  EXPECT_EQ(classify_flow(10, 0, false, false, t), FlowHealth::kHealthy);
  EXPECT_EQ(classify_flow(0, 0, false, false, t), FlowHealth::kHealthy);
  EXPECT_EQ(classify_flow(10, 1, false, false, t), FlowHealth::kHealthy);         // 0.1 exactly
  EXPECT_EQ(classify_flow(100, 11, false, false, t), FlowHealth::kMinorIssues);   // 0.11
  EXPECT_EQ(classify_flow(10, 3, false, false, t), FlowHealth::kMinorIssues);     // 0.3 exactly
  EXPECT_EQ(classify_flow(100, 31, false, false, t), FlowHealth::kProblemsDetected);
  EXPECT_EQ(classify_flow(10, 10, false, false, t), FlowHealth::kProblemsDetected);  // no explosion
  EXPECT_EQ(classify_flow(100, 1, true, false, t), FlowHealth::kMinorIssues);     // any vanishing
  EXPECT_EQ(classify_flow(100, 1, false, true, t), FlowHealth::kProblemsDetected);  // any explosion
  EXPECT_EQ(classify_flow(10, 5, false, true, t), FlowHealth::kProblemsDetected);   // 0.5 exactly
  EXPECT_EQ(classify_flow(100, 51, false, true, t), FlowHealth::kCritical);
  Thresholds strict = t;
  strict.flow_minor_ratio = 0;
  EXPECT_EQ(classify_flow(1000, 1, false, false, strict), FlowHealth::kMinorIssues);
}

TEST(FlowHealth, SummaryNamesNodesWithTheirMeasuredValues) {
  Timeline tl;
  for (int step = 0; step < 10; ++step) {
    tl.add(rec(step, "trunk0", grad(step < 4 ? 1.0 : 2e-9)));  // vanishing from step 4
    tl.add(rec(step, "head", grad(step == 7 ? 5e3 : 1.0)));    // one explosion at step 7
  }
  tl.finish();
  const FlowSummary s = summarize_flow(tl);
  EXPECT_EQ(s.frames, 10);
  EXPECT_EQ(s.issue_frames, 6);
  EXPECT_DOUBLE_EQ(s.issue_ratio, 0.6);
  EXPECT_EQ(s.health, FlowHealth::kCritical);
  ASSERT_EQ(s.nodes.size(), 2u);
  EXPECT_EQ(s.nodes[0].vanishing_frames, 6);
  EXPECT_EQ(s.nodes[0].first_vanishing, 4);
  EXPECT_DOUBLE_EQ(s.nodes[0].min_norm, 2e-9);
  EXPECT_DOUBLE_EQ(s.nodes[0].median_norm, 2e-9);
  EXPECT_EQ(s.nodes[1].exploding_frames, 1);
  EXPECT_EQ(s.nodes[1].first_exploding, 7);
  EXPECT_DOUBLE_EQ(s.nodes[1].max_norm, 5e3);
  ASSERT_EQ(s.recommendations.size(), 3u);
  EXPECT_EQ(s.recommendations[0],
            "trunk0: gradient L2 < 1e-07 in 6 of 10 frames since step 4 (median 2e-09, lowest 2e-09); "
            "try residual connections, normalisation, Xavier/Kaiming initialisation or a larger learning rate");
  EXPECT_THAT(s.recommendations[1], HasSubstr("head: gradient L2 > 1e+03 or non-finite in 1 of 10 frames since step 7 (largest 5e+03"));
  EXPECT_THAT(s.recommendations[2], HasSubstr("critical: 6 of 10 frames with issues"));
}

TEST(FlowHealth, SummaryCoversOnlyTheWindow) {
  Timeline tl({}, 4);
  for (int step = 0; step < 10; ++step) tl.add(rec(step, "a", grad(step < 6 ? 1e-9 : 1.0)));
  tl.finish();
  const FlowSummary s = summarize_flow(tl);
  EXPECT_EQ(s.frames, 4);
  EXPECT_EQ(s.first_step, 6);
  EXPECT_EQ(s.issue_frames, 0);
  EXPECT_EQ(s.health, FlowHealth::kHealthy);
  EXPECT_EQ(s.recommendations.back(), "healthy: 0 of 4 frames with issues; no action needed");
}

// The builder fed each frame as a one-frame window closes it (as `gradscope report` reads a
// run) says what summarize_flow says over every frame kept.
TEST(FlowSummaryBuilder, FrameByFrameFromAOneFrameWindowEqualsTheWholeTimeline) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  Timeline all, last_only({}, 1);
  FlowSummaryBuilder builder;
  int64_t fed = 0;
  const auto feed = [&] {
    const int64_t closed = static_cast<int64_t>(last_only.frames().size()) + last_only.dropped();
    if (closed > fed) builder.add(last_only.frames().back());
    fed = closed;
  };
  // "a": norms 5, 1, 4, 2 (median of an even count: (2 + 4) / 2 = 3); "b": a NaN, then Inf;
  // "late": first seen at step 2, one vanishing norm; "nan": only NaN norms.
  const double a[] = {5, 1, 4, 2}, b[] = {kNaN, 1, kInf, 2};
  for (int step = 0; step < 4; ++step) {
    std::vector<Record> records = {rec(step, "a", grad(a[step])), rec(step, "nan", grad(kNaN))};
    records.push_back(std::isnan(b[step]) ? rec(step, "b", grad(kNaN))
                                          : rec(step, "b", grad(b[step])));
    if (step == 2) records.push_back(rec(step, "late", grad(1e-9)));
    for (const Record& r : records) {
      all.add(r);
      last_only.add(r);
      feed();
    }
  }
  all.finish();
  last_only.finish();
  feed();
  const FlowSummary whole = summarize_flow(all), streamed = builder.finish(last_only.nodes());
  EXPECT_EQ(last_only.frames().size(), 1u);
  ASSERT_EQ(streamed.nodes.size(), 4u);
  EXPECT_EQ(streamed.nodes[0].node, "a");
  EXPECT_DOUBLE_EQ(streamed.nodes[0].median_norm, 3.0);
  EXPECT_DOUBLE_EQ(streamed.nodes[0].min_norm, 1.0);
  EXPECT_DOUBLE_EQ(streamed.nodes[0].max_norm, 5.0);
  EXPECT_EQ(streamed.nodes[2].node, "b");
  EXPECT_DOUBLE_EQ(streamed.nodes[2].median_norm, 2.0);  // of 1, 2, Inf: the NaN step left out
  EXPECT_EQ(streamed.nodes[2].max_norm, kInf);
  EXPECT_EQ(streamed.nodes[2].first_exploding, 0);       // the NaN step explodes
  EXPECT_TRUE(std::isnan(streamed.nodes[1].median_norm));
  EXPECT_EQ(streamed.nodes[3].node, "late");
  EXPECT_EQ(streamed.nodes[3].first_vanishing, 2);
  EXPECT_EQ(streamed.frames, 4);
  EXPECT_EQ(streamed.health, FlowHealth::kCritical);
  EXPECT_EQ(streamed.frames, whole.frames);
  EXPECT_EQ(streamed.issue_frames, whole.issue_frames);
  EXPECT_EQ(streamed.first_step, whole.first_step);
  EXPECT_EQ(streamed.last_step, whole.last_step);
  EXPECT_EQ(streamed.health, whole.health);
  EXPECT_EQ(streamed.recommendations, whole.recommendations);
  ASSERT_EQ(streamed.nodes.size(), whole.nodes.size());
  for (std::size_t i = 0; i < whole.nodes.size(); ++i) {
    SCOPED_TRACE(whole.nodes[i].node);
    const NodeFlow &x = streamed.nodes[i], &y = whole.nodes[i];
    EXPECT_EQ(x.node, y.node);
    EXPECT_EQ(x.frames, y.frames);
    EXPECT_EQ(x.vanishing_frames, y.vanishing_frames);
    EXPECT_EQ(x.exploding_frames, y.exploding_frames);
    EXPECT_EQ(x.first_vanishing, y.first_vanishing);
    EXPECT_EQ(x.first_exploding, y.first_exploding);
    for (const auto& [u, v] : {std::pair{x.median_norm, y.median_norm}, {x.min_norm, y.min_norm},
                               {x.max_norm, y.max_norm}})
      EXPECT_TRUE(u == v || (std::isnan(u) && std::isnan(v))) << u << " vs " << v;
  }
}

TEST(Timeline, EmbeddingRowsGradientCountsAsTheTablesGradient) {
  Timeline tl;
  tl.add(rec(0, "item", grad(3.0), Site::kEmbeddingRows));
  tl.add(rec(0, "fc", grad(4.0), Site::kOutputGrad));
  tl.add(rec(0, "fc", grad(2.0)));  // parameter gradients win over output gradients
  tl.finish();
  ASSERT_EQ(tl.frames().size(), 1u);
  ASSERT_EQ(tl.frames()[0].layers.size(), 2u);
  EXPECT_DOUBLE_EQ(tl.frames()[0].layers[0].grad_norm, 3.0);
  EXPECT_DOUBLE_EQ(tl.frames()[0].layers[1].grad_norm, 2.0);
}

}  // namespace
}  // namespace gradscope
