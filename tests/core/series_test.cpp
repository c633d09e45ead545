// Per-node series: which site feeds each measure, merging within a step, NaN for what a step
// did not record, step order, and thinning that keeps long runs bounded and evenly spread.
#include "gradscope/core/audit/series.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gradscope/core/error.h"
#include "../common/stats_fixture.h"

namespace gradscope {
namespace {

using test::with_l2;
using ::testing::HasSubstr;

Record rec(int64_t step, const std::string& node, Site site, Stats s) {
  return Record{step, node, site, s};
}

TEST(Series, EachMeasureComesFromItsSite) {
  SeriesBuilder b;
  b.add(rec(0, "fc1", Site::kParamGrad, with_l2(3.0)));
  b.add(rec(0, "fc1", Site::kOutputGrad, with_l2(99.0)));  // params win, as in the rules
  b.add(rec(0, "fc1", Site::kActivation, with_l2(8.0, /*count=*/4, /*zeros=*/1, /*saturated=*/2)));
  b.add(rec(0, "fc1", Site::kParam, with_l2(200.0)));
  b.add(rec(0, "fc1", Site::kUpdate, with_l2(0.5)));
  b.add(rec(0, "relu", Site::kOutputGrad, with_l2(4.0)));
  const std::vector<NodeSeries> s = b.finish();
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].node, "fc1");
  ASSERT_EQ(s[0].points.size(), 1u);
  const SeriesPoint& p = s[0].points[0];
  EXPECT_EQ(p.step, 0);
  EXPECT_DOUBLE_EQ(p.grad_norm, 3.0);
  EXPECT_DOUBLE_EQ(p.act_mean_abs, 8.0 / 4);
  EXPECT_DOUBLE_EQ(p.act_zero_frac, 0.25);
  EXPECT_DOUBLE_EQ(p.act_saturated_frac, 0.5);
  EXPECT_DOUBLE_EQ(p.update_ratio, 0.5 / 200.0);
  EXPECT_EQ(s[1].node, "relu");
  EXPECT_DOUBLE_EQ(s[1].points[0].grad_norm, 4.0);  // no params: the output gradient
  EXPECT_TRUE(std::isnan(s[1].points[0].act_mean_abs));
  EXPECT_TRUE(std::isnan(s[1].points[0].update_ratio));
}

TEST(Series, EmbeddingRowsStandInForAMissingParameterGradient) {
  SeriesBuilder b;
  b.add(rec(0, "item", Site::kEmbeddingRows, with_l2(6.0)));
  b.add(rec(0, "item", Site::kOutputGrad, with_l2(1.0)));
  EXPECT_DOUBLE_EQ(b.finish()[0].points[0].grad_norm, 6.0);
}

TEST(Series, RecordsOfOneStepMergeAndNonFiniteGradientsShow) {
  SeriesBuilder b;
  b.add(rec(5, "a", Site::kParamGrad, with_l2(3.0)));
  b.add(rec(5, "a", Site::kParamGrad, with_l2(4.0)));  // a second parameter: L2 of both
  Stats nan = with_l2(1.0);
  nan.nan = 1;
  nan.count += 1;
  b.add(rec(6, "a", Site::kParamGrad, nan));
  Stats inf = with_l2(1.0);
  inf.pos_inf = 1;
  inf.count += 1;
  b.add(rec(7, "a", Site::kParamGrad, inf));
  const std::vector<NodeSeries> s = b.finish();
  ASSERT_EQ(s[0].points.size(), 3u);
  EXPECT_DOUBLE_EQ(s[0].points[0].grad_norm, 5.0);
  EXPECT_TRUE(std::isnan(s[0].points[1].grad_norm));
  EXPECT_EQ(s[0].points[2].grad_norm, std::numeric_limits<double>::infinity());
}

TEST(Series, UpdateRatioNeedsANonZeroParameterNorm) {
  SeriesBuilder b;
  b.add(rec(0, "a", Site::kParam, with_l2(0.0)));
  b.add(rec(0, "a", Site::kUpdate, with_l2(1.0)));
  EXPECT_TRUE(std::isnan(b.finish()[0].points[0].update_ratio));
}

TEST(Series, StepsOutOfOrderAndBadLimitsAreErrors) {
  SeriesBuilder b;
  b.add(rec(3, "a", Site::kParamGrad, with_l2(1.0)));
  try {
    b.add(rec(2, "a", Site::kParamGrad, with_l2(1.0)));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("step 2 arrived after step 3"));
  }
  EXPECT_THROW(SeriesBuilder(-1), Error);
  EXPECT_THROW(SeriesBuilder(1), Error);
  EXPECT_TRUE(SeriesBuilder().finish().empty());
}

TEST(Series, ThinningKeepsAtMostMaxStepsEvenlySpread) {
  SeriesBuilder b(/*max_steps=*/8);
  for (int64_t step = 0; step < 100; ++step) {
    b.add(rec(step, "a", Site::kParamGrad, with_l2(static_cast<double>(step))));
    b.add(rec(step, "b", Site::kParamGrad, with_l2(1.0)));
  }
  const std::vector<NodeSeries> s = b.finish();
  // 100 steps into at most 8: thinned four times, every 16th step kept.
  EXPECT_EQ(b.stride(), 16);
  for (const NodeSeries& n : s) {
    ASSERT_EQ(n.points.size(), 7u);
    for (std::size_t i = 0; i < n.points.size(); ++i) EXPECT_EQ(n.points[i].step, 16 * int64_t(i));
  }
  EXPECT_DOUBLE_EQ(s[0].points[3].grad_norm, 48.0);  // the step's own value, not an average
}

}  // namespace
}  // namespace gradscope
