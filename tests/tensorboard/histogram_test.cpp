#include "gradscope/tensorboard/histogram.h"

#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <limits>

namespace gradscope::tensorboard {
namespace {

TEST(Histogram, DefaultLimitsAreTensorFlowsExponentialBuckets) {
  const std::vector<double>& l = default_bucket_limits();
  // 1e-12 x 1.1^k below 1e20 (k = 0..773), DBL_MAX, mirrored, and 0.
  ASSERT_EQ(l.size(), 2u * 775u + 1u);
  EXPECT_EQ(l.front(), -DBL_MAX);
  EXPECT_EQ(l.back(), DBL_MAX);
  EXPECT_EQ(l[775], 0.0);
  EXPECT_DOUBLE_EQ(l[776], 1e-12);
  EXPECT_DOUBLE_EQ(l[777], 1.1e-12);
  for (std::size_t i = 1; i < l.size(); ++i) {
    ASSERT_LT(l[i - 1], l[i]);
    EXPECT_EQ(l[i], -l[l.size() - 1 - i]);
  }
}

TEST(Histogram, CountsEachFiniteValueInItsBucketAndCollapsesEmptyRuns) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::vector<double> values{-1.0, 0.0, 0.5, 0.5, 2.0, nan, INFINITY};
  long skipped = 0;
  const Histogram h = histogram_of(values, &skipped);
  EXPECT_EQ(skipped, 2);
  EXPECT_EQ(h.num, 5);
  EXPECT_EQ(h.min, -1.0);
  EXPECT_EQ(h.max, 2.0);
  EXPECT_EQ(h.sum, 2.0);
  EXPECT_EQ(h.sum_squares, 5.5);
  ASSERT_EQ(h.limits.size(), h.counts.size());
  double low = -DBL_MAX, total = 0;
  int nonempty = 0;
  for (std::size_t i = 0; i < h.limits.size(); ++i) {
    double in = 0;
    for (double v : values)
      if (std::isfinite(v) && v >= low && v < h.limits[i]) ++in;
    EXPECT_EQ(h.counts[i], in) << "bucket up to " << h.limits[i];
    nonempty += h.counts[i] > 0;
    total += h.counts[i];
    if (i > 0) {
      EXPECT_FALSE(h.counts[i] == 0 && h.counts[i - 1] == 0) << "two empty buckets in a row";
    }
    low = h.limits[i];
  }
  EXPECT_EQ(total, 5);
  EXPECT_EQ(nonempty, 4);  // -1, 0, 0.5 (twice), 2
  EXPECT_LT(h.limits.size(), 12u);
}

TEST(Histogram, EmptyAndAllNaNGiveZeroCounts) {
  long skipped = -1;
  const Histogram h = histogram_of({std::numeric_limits<double>::quiet_NaN()}, &skipped);
  EXPECT_EQ(skipped, 1);
  EXPECT_EQ(h.num, 0);
  EXPECT_EQ(h.min, 0);
  EXPECT_EQ(h.max, 0);
  ASSERT_EQ(h.counts.size(), 1u);  // one collapsed empty run
  EXPECT_EQ(h.counts[0], 0);
}

TEST(Histogram, AnElementHistogramEncodesAsTheSameValuesWould) {
  // The audit's counts (core) and histogram_of over the values: one proto, bucket for bucket.
  const std::vector<double> values = {-3e5, -2.5, -2.5, -1e-13, 0.0, 0.0, 1e-12, 0.7, 0.71, 42.0, 9e19,
                                      std::numeric_limits<double>::quiet_NaN()};
  HistogramCounter counter;
  counter.add(values.data(), values.size());
  const ElementHistogram elements = counter.take(0, "n", Site::kActivation);
  const Histogram a = histogram_of(elements);
  long skipped = 0;
  const Histogram b = histogram_of(values, &skipped);
  EXPECT_EQ(skipped, 1);
  EXPECT_EQ(elements.nonfinite, 1u);
  EXPECT_EQ(a.num, b.num);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
  EXPECT_EQ(a.sum, b.sum);
  EXPECT_EQ(a.sum_squares, b.sum_squares);
  EXPECT_EQ(a.limits, b.limits);
  EXPECT_EQ(a.counts, b.counts);
  // No two empty buckets in a row, and the counts add up to num.
  double total = 0;
  for (std::size_t i = 0; i < a.counts.size(); ++i) {
    total += a.counts[i];
    if (i + 1 < a.counts.size()) {
      EXPECT_TRUE(a.counts[i] > 0 || a.counts[i + 1] > 0) << i;
    }
  }
  EXPECT_EQ(total, a.num);
}

}  // namespace
}  // namespace gradscope::tensorboard
