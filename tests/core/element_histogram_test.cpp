// Element histograms: the bucket search against upper_bound over the limits (every limit, its
// neighbours, signs, zero, denormals, DBL_MAX), the limits against TensorFlow's definition, the
// counter against a naive count, NaN and Inf, and merging.
#include "gradscope/core/audit/element_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>
#include <map>
#include <random>

namespace gradscope {
namespace {

std::size_t reference_bucket(double v) {
  const std::vector<double>& l = histogram_bucket_limits();
  const auto i = static_cast<std::size_t>(std::upper_bound(l.begin(), l.end(), v) - l.begin());
  return std::min(i, l.size() - 1);
}

TEST(ElementHistogram, LimitsAreTensorFlowsDefaultBuckets) {
  // histogram.cc's InitDefaultBucketsInner: v = 1e-12, v *= 1.1 while v < 1e20; then DBL_MAX.
  std::vector<double> pos;
  for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) pos.push_back(v);
  pos.push_back(DBL_MAX);
  const std::vector<double>& l = histogram_bucket_limits();
  ASSERT_EQ(l.size(), 2 * pos.size() + 1);
  EXPECT_EQ(l.size(), 1551u);
  const std::size_t m = pos.size();
  EXPECT_EQ(l[m], 0.0);
  for (std::size_t k = 0; k < m; ++k) {
    EXPECT_EQ(l[m + 1 + k], pos[k]);
    EXPECT_EQ(l[m - 1 - k], -pos[k]);
  }
}

TEST(ElementHistogram, BucketIsUpperBoundForEveryLimitAndItsNeighbours) {
  for (double limit : histogram_bucket_limits()) {
    for (double v : {limit, std::nextafter(limit, -DBL_MAX), std::nextafter(limit, DBL_MAX)}) {
      if (!std::isfinite(v)) continue;
      ASSERT_EQ(histogram_bucket(v), reference_bucket(v)) << v;
    }
  }
  for (double v : {0.0, -0.0, 4.9e-324, -4.9e-324, DBL_MIN, -DBL_MIN, 1e-300, -1e-300, 1e300, -1e300,
                   DBL_MAX, -DBL_MAX, 1.0, -1.0})
    EXPECT_EQ(histogram_bucket(v), reference_bucket(v)) << v;
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> exponent(-40, 40);
  for (int i = 0; i < 200000; ++i) {
    const double v = (i % 2 ? -1 : 1) * std::pow(10.0, exponent(rng));
    ASSERT_EQ(histogram_bucket(v), reference_bucket(v)) << v;
  }
}

TEST(ElementHistogram, CounterMatchesANaiveCountAndLeavesNonFiniteOut) {
  const std::vector<float> x = {0.0f, -0.0f, 1.0f, 1.0f, -2.5f, 3e-20f, 7e5f,
                                std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity(),
                                -std::numeric_limits<float>::infinity(), 1e-45f};
  HistogramCounter c;
  c.add(x.data(), x.size());
  const ElementHistogram h = c.take(3, "fc1", Site::kOutputGrad);
  EXPECT_EQ(h.step, 3);
  EXPECT_EQ(h.node, "fc1");
  EXPECT_EQ(h.site, Site::kOutputGrad);
  EXPECT_EQ(h.num, 8u);
  EXPECT_EQ(h.nonfinite, 3u);
  EXPECT_EQ(h.min, -2.5);
  EXPECT_EQ(h.max, static_cast<double>(7e5f));
  std::map<std::size_t, uint64_t> want;
  double sum = 0, sq = 0;
  for (float f : x)
    if (std::isfinite(f)) {
      ++want[reference_bucket(f)];
      sum += f;
      sq += static_cast<double>(f) * f;
    }
  EXPECT_DOUBLE_EQ(h.sum, sum);
  EXPECT_DOUBLE_EQ(h.sum_squares, sq);
  std::map<std::size_t, uint64_t> got(h.buckets.begin(), h.buckets.end());
  EXPECT_EQ(got, want);
  EXPECT_TRUE(std::is_sorted(h.buckets.begin(), h.buckets.end()));
  // take() starts the counter again.
  const ElementHistogram empty = c.take(4, "fc1", Site::kActivation);
  EXPECT_EQ(empty.num, 0u);
  EXPECT_EQ(empty.nonfinite, 0u);
  EXPECT_TRUE(empty.buckets.empty());
  EXPECT_EQ(empty.min, 0.0);
  EXPECT_EQ(empty.max, 0.0);
}

TEST(ElementHistogram, MergingTwoHalvesEqualsCountingTheWhole) {
  std::mt19937 rng(3);
  std::normal_distribution<double> d(0, 2);
  std::vector<double> x(5000);
  for (double& v : x) v = d(rng);
  x[17] = std::numeric_limits<double>::quiet_NaN();
  HistogramCounter whole, a, b;
  whole.add(x.data(), x.size());
  a.add(x.data(), 1234);
  b.add(x.data() + 1234, x.size() - 1234);
  const ElementHistogram w = whole.take(0, "n", Site::kParamGrad);
  ElementHistogram m = a.take(0, "n", Site::kParamGrad);
  merge_into(m, b.take(0, "n", Site::kParamGrad));
  EXPECT_EQ(m.num, w.num);
  EXPECT_EQ(m.nonfinite, 1u);
  EXPECT_EQ(m.min, w.min);
  EXPECT_EQ(m.max, w.max);
  EXPECT_NEAR(m.sum, w.sum, 1e-9);
  EXPECT_EQ(m.buckets, w.buckets);
  // An empty histogram merged in changes nothing, and nothing merged into an empty one is it.
  ElementHistogram empty;
  merge_into(m, empty);
  EXPECT_EQ(m.buckets, w.buckets);
  EXPECT_EQ(m.min, w.min);
  merge_into(empty, w);
  EXPECT_EQ(empty.min, w.min);
  EXPECT_EQ(empty.buckets, w.buckets);
}

}  // namespace
}  // namespace gradscope
