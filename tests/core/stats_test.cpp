// Every statistic against a naive two-pass double reference, for each dtype and kernel.
#include "gradscope/core/stats/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gradscope/core/error.h"
#include "test_data.h"

namespace gradscope {
namespace {

using test::Reference;
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::vector<Kernel> kernels() {
  std::vector<Kernel> k = {Kernel::kScalar};
  if (avx2_available()) k.push_back(Kernel::kAvx2);
  return k;
}

void expect_matches(const Stats& s, const Reference& r, const std::string& where) {
  SCOPED_TRACE(where);
  EXPECT_EQ(s.count, r.count);
  EXPECT_EQ(s.finite, r.finite);
  EXPECT_EQ(s.nan, r.nan);
  EXPECT_EQ(s.pos_inf, r.pos_inf);
  EXPECT_EQ(s.neg_inf, r.neg_inf);
  EXPECT_EQ(s.zero, r.zero);
  EXPECT_EQ(s.saturated, r.saturated);
  EXPECT_EQ(s.min, r.min);
  EXPECT_EQ(s.max, r.max);
  EXPECT_EQ(s.max_abs, r.max_abs);
  // Sums differ from the reference only by summation order: bound by n * eps * sum|x|.
  const double tol = 1e-12 * (r.sum_abs + 1e-300) * std::max<double>(1.0, std::sqrt(r.count));
  EXPECT_NEAR(s.sum, r.sum, tol);
  EXPECT_NEAR(s.sum_abs, r.sum_abs, tol);
  EXPECT_NEAR(s.sum_sq, r.sum_sq, 1e-12 * (r.sum_sq + 1e-300) * std::max<double>(1.0, std::sqrt(r.count)));
  if (r.finite) {
    EXPECT_NEAR(s.mean(), r.mean, tol / r.finite + 1e-300);
    EXPECT_NEAR(s.mean_abs(), r.sum_abs / r.finite, tol / r.finite + 1e-300);
    EXPECT_NEAR(s.variance(), r.variance, 1e-9 * (r.variance + r.mean * r.mean) + 1e-300);
    EXPECT_NEAR(s.stddev(), std::sqrt(r.variance), 1e-6 * std::sqrt(r.variance) + 1e-150);
    EXPECT_NEAR(s.l2(), std::sqrt(r.sum_sq), 1e-12 * std::sqrt(r.sum_sq) * 10);
  } else {
    EXPECT_TRUE(std::isnan(s.mean()));
    EXPECT_TRUE(std::isnan(s.variance()));
    EXPECT_FALSE(s.has_finite());
  }
  if (r.count) {
    EXPECT_DOUBLE_EQ(s.frac_nan(), static_cast<double>(r.nan) / r.count);
    EXPECT_DOUBLE_EQ(s.frac_inf(), static_cast<double>(r.pos_inf + r.neg_inf) / r.count);
    EXPECT_DOUBLE_EQ(s.frac_zero(), static_cast<double>(r.zero) / r.count);
    EXPECT_DOUBLE_EQ(s.frac_saturated(), static_cast<double>(r.saturated) / r.count);
  }
}

template <class Codec>
class StatsTyped : public ::testing::Test {
 protected:
  using Storage = typename Codec::Storage;

  // Stores `values` in this dtype and returns what was really stored, decoded.
  std::vector<double> store(const std::vector<double>& values) {
    data_.clear();
    std::vector<double> stored;
    for (double v : values) {
      data_.push_back(Codec::encode(v));
      stored.push_back(Codec::decode(data_.back()));
    }
    return stored;
  }

  void check(const std::vector<double>& values, StatsOptions opt = {}) {
    const std::vector<double> stored = store(values);
    const Reference ref = test::reference(stored, opt.dead_eps, opt.saturation);
    auto view = TensorView::contiguous(data_.data(), Codec::kDType,
                                       {static_cast<int64_t>(data_.size())}, "t");
    for (Kernel k : kernels()) {
      opt.kernel = k;
      expect_matches(compute(view, opt), ref,
                     std::string(dtype_name(Codec::kDType)) + (k == Kernel::kAvx2 ? " avx2" : " scalar") +
                         " n=" + std::to_string(values.size()));
    }
  }

  std::vector<Storage> data_;
};

using Dtypes = ::testing::Types<test::F32, test::F64, test::F16, test::BF16>;
TYPED_TEST_SUITE(StatsTyped, Dtypes);

TYPED_TEST(StatsTyped, RandomValuesOfManyLengths) {
  // Lengths around the 8-wide vector step exercise the scalar tail.
  for (std::size_t n : {1u, 7u, 8u, 9u, 15u, 16u, 17u, 1000u, 4099u, 100003u})
    this->check(test::mixed_values(n, static_cast<uint32_t>(n)));
}

TYPED_TEST(StatsTyped, Empty) {
  this->check({});
  auto view = TensorView::contiguous(nullptr, TypeParam::kDType, {0});
  const Stats s = compute(view);
  EXPECT_EQ(s.count, 0);
  EXPECT_TRUE(std::isnan(s.l2()));
  EXPECT_TRUE(std::isnan(s.frac_zero()));
}

TYPED_TEST(StatsTyped, OneElement) {
  this->check({-2.5});
  this->check({0.0});
}

TYPED_TEST(StatsTyped, AllNaN) {
  this->check(std::vector<double>(37, kNaN));
}

TYPED_TEST(StatsTyped, InfinitiesAreCountedNotSummed) {
  std::vector<double> v = test::mixed_values(100, 3);
  v[3] = kInf;
  v[50] = -kInf;
  v[51] = -kInf;
  v[99] = kNaN;
  this->check(v);
}

TYPED_TEST(StatsTyped, Denormals) {
  // The smallest subnormals of each format, and of the narrower ones stored in this dtype.
  std::vector<double> v = {std::ldexp(1.0, -24), std::ldexp(3.0, -20), -std::ldexp(1.0, -133),
                           std::ldexp(1.0, -149), 1e-310, -1e-40, 0.0, -0.0, 1.0};
  for (int i = 0; i < 20; ++i) v.push_back(std::ldexp(1.0 + i, -140));
  StatsOptions opt;
  opt.dead_eps = 0;  // only exact zeros count, so every denormal must be seen as non-zero
  this->check(v, opt);
  this->check(v);
}

TYPED_TEST(StatsTyped, ThresholdBoundariesAreInclusiveForZeroAndStrictForSaturation) {
  // Values exactly at the thresholds as stored in this dtype.
  StatsOptions opt;
  opt.dead_eps = TypeParam::decode(TypeParam::encode(0.25));
  opt.saturation = TypeParam::decode(TypeParam::encode(4.0));
  std::vector<double> v = {0.25, -0.25, 0.2, 0.3, 4.0, -4.0, 4.5, -5.0, kInf};
  for (int i = 0; i < 9; ++i) v.push_back(v[i]);  // past 8, so the vector path runs
  this->check(v, opt);
  this->store(v);
  auto view = TensorView::contiguous(this->data_.data(), TypeParam::kDType, {18});
  for (Kernel k : kernels()) {
    opt.kernel = k;
    const Stats s = compute(view, opt);
    EXPECT_EQ(s.zero, 6);       // +-0.25 (equal counts) and 0.2
    EXPECT_EQ(s.saturated, 4);  // 4.5 and -5.0; exactly 4 is not saturated; Inf is not finite
  }
}

TYPED_TEST(StatsTyped, ThresholdBetweenRepresentableValuesAgreesWithDouble) {
  // 0.1 is not representable: the kernels must compare as if in double.
  StatsOptions opt;
  opt.dead_eps = 0.1;
  opt.saturation = 0.1;
  std::vector<double> v;
  for (int i = 0; i < 64; ++i) v.push_back(0.09 + i * 0.0003);
  this->check(v, opt);
}

TYPED_TEST(StatsTyped, StridedViewsMatchTheirElements) {
  const std::vector<double> values = test::mixed_values(6 * 70, 11);
  const std::vector<double> stored = this->store(values);
  const auto* base = this->data_.data();
  struct Case {
    std::vector<int64_t> shape, strides;
    int64_t offset;
  };
  const std::vector<Case> cases = {
      {{70, 6}, {1, 70}, 0},          // transpose of a 6x70 matrix: gathered
      {{6, 35}, {70, 2}, 1},          // every other column
      {{3, 70}, {140, 1}, 0},         // every other row: rows run directly
      {{210}, {-2}, 6 * 70 - 1},      // reversed, every other element
      {{4, 5, 3}, {0, 3, 1}, 0},      // broadcast dimension (stride 0)
  };
  for (const Case& c : cases) {
    std::vector<double> expected;
    std::vector<int64_t> idx(c.shape.size(), 0);
    int64_t n = 1;
    for (int64_t e : c.shape) n *= e;
    for (int64_t i = 0; i < n; ++i) {
      int64_t off = c.offset, rest = i;
      for (std::size_t d = c.shape.size(); d-- > 0;) {
        off += (rest % c.shape[d]) * c.strides[d];
        rest /= c.shape[d];
      }
      expected.push_back(stored[static_cast<std::size_t>(off)]);
    }
    const Reference ref = test::reference(expected, 1e-7, 50);
    auto view = TensorView::strided(base + c.offset, TypeParam::kDType, c.shape, c.strides);
    for (Kernel k : kernels()) {
      for (int threads : {1, 3}) {
        StatsOptions opt;
        opt.kernel = k;
        opt.threads = threads;
        expect_matches(compute(view, opt), ref, "strided case " + std::to_string(&c - cases.data()));
      }
    }
  }
}

TEST(Stats, BadOptionsAreErrors) {
  float x = 1;
  auto v = TensorView::contiguous(&x, DType::kFloat32, {1}, "g");
  StatsOptions o;
  o.threads = 0;
  EXPECT_THROW(compute(v, o), Error);
  o = {};
  o.dead_eps = -1;
  EXPECT_THROW(compute(v, o), Error);
  o = {};
  o.saturation = kNaN;
  EXPECT_THROW(compute(v, o), Error);
}

TEST(Stats, AllNaNHasZeroNormAndNoMean) {
  std::vector<float> x(10, std::nanf(""));
  const Stats s = compute(TensorView::contiguous(x.data(), DType::kFloat32, {10}));
  EXPECT_EQ(s.nan, 10);
  EXPECT_EQ(s.l2(), 0.0);
  EXPECT_TRUE(std::isnan(s.mean_abs()));
  EXPECT_DOUBLE_EQ(s.frac_nan(), 1.0);
}

}  // namespace
}  // namespace gradscope
