// Shared helpers for the core tests: dtype codecs and a naive two-pass reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "gradscope/core/stats/half.h"
#include "gradscope/core/stats/stats.h"
#include "gradscope/core/stats/tensor_view.h"

namespace gradscope::test {

struct F32 {
  using Storage = float;
  static constexpr DType kDType = DType::kFloat32;
  static Storage encode(double v) { return static_cast<float>(v); }
  static double decode(Storage s) { return s; }
};
struct F64 {
  using Storage = double;
  static constexpr DType kDType = DType::kFloat64;
  static Storage encode(double v) { return v; }
  static double decode(Storage s) { return s; }
};
struct F16 {
  using Storage = uint16_t;
  static constexpr DType kDType = DType::kFloat16;
  static Storage encode(double v) { return float_to_half(static_cast<float>(v)); }
  static double decode(Storage s) { return half_to_float(s); }
};
struct BF16 {
  using Storage = uint16_t;
  static constexpr DType kDType = DType::kBFloat16;
  static Storage encode(double v) { return float_to_bfloat16(static_cast<float>(v)); }
  static double decode(Storage s) { return bfloat16_to_float(s); }
};

/// What a careful person computes by hand: two passes in double over the decoded values.
struct Reference {
  int64_t count = 0, finite = 0, nan = 0, pos_inf = 0, neg_inf = 0, zero = 0, saturated = 0;
  double sum = 0, sum_sq = 0, sum_abs = 0;
  double min = std::numeric_limits<double>::infinity(), max = -min, max_abs = 0;
  double mean = std::numeric_limits<double>::quiet_NaN(), variance = mean;
};

inline Reference reference(const std::vector<double>& xs, double dead_eps, double saturation) {
  Reference r;
  for (double x : xs) {
    ++r.count;
    if (std::fabs(x) <= dead_eps) ++r.zero;
    if (std::isnan(x)) { ++r.nan; continue; }
    if (std::isinf(x)) { (x > 0 ? r.pos_inf : r.neg_inf)++; continue; }
    ++r.finite;
    if (std::fabs(x) > saturation) ++r.saturated;
    r.sum += x;
    r.sum_sq += x * x;
    r.sum_abs += std::fabs(x);
    r.min = std::min(r.min, x);
    r.max = std::max(r.max, x);
    r.max_abs = std::max(r.max_abs, std::fabs(x));
  }
  if (r.finite) {
    r.mean = r.sum / r.finite;
    double m2 = 0;
    for (double x : xs)
      if (std::isfinite(x)) m2 += (x - r.mean) * (x - r.mean);
    r.variance = m2 / r.finite;
  }
  return r;
}

/// Normal values with a few exact zeros, large values and the occasional denormal.
inline std::vector<double> mixed_values(std::size_t n, uint32_t seed, double scale = 1.0) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0.0, scale);
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    switch (rng() % 16) {
      case 0: v[i] = 0.0; break;
      case 1: v[i] = 60.0 * (rng() % 2 ? 1 : -1); break;
      default: v[i] = normal(rng);
    }
  }
  return v;
}

/// Two summaries of the same values: counts, min and max exact, sums within 1e-12 relative
/// (only the order of double additions may differ).
inline void expect_same(const Stats& a, const Stats& b) {
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.finite, b.finite);
  EXPECT_EQ(a.nan, b.nan);
  EXPECT_EQ(a.pos_inf, b.pos_inf);
  EXPECT_EQ(a.neg_inf, b.neg_inf);
  EXPECT_EQ(a.zero, b.zero);
  EXPECT_EQ(a.saturated, b.saturated);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
  EXPECT_EQ(a.max_abs, b.max_abs);
  EXPECT_NEAR(a.sum, b.sum, 1e-12 * a.sum_abs + 1e-300);
  EXPECT_NEAR(a.sum_sq, b.sum_sq, 1e-12 * a.sum_sq + 1e-300);
  EXPECT_NEAR(a.sum_abs, b.sum_abs, 1e-12 * a.sum_abs + 1e-300);
}

}  // namespace gradscope::test
