// compute_and_copy and compute_difference against a plain copy and a materialised difference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "gradscope/core/error.h"
#include "gradscope/core/stats/carry.h"
#include "gradscope/core/stats/stats.h"
#include "test_data.h"

namespace gradscope {
namespace {

using test::expect_same;

template <class Codec>
class Paired : public ::testing::Test {};
using Dtypes = ::testing::Types<test::F32, test::F64, test::F16, test::BF16>;
TYPED_TEST_SUITE(Paired, Dtypes);

TYPED_TEST(Paired, CopyIsExactAndItsStatsAreThePlainOnes) {
  using S = typename TypeParam::Storage;
  for (std::size_t n : {0u, 5u, 4096u, 10001u}) {
    std::vector<S> src;
    for (double v : test::mixed_values(n, 3)) src.push_back(TypeParam::encode(v));
    if (n > 7) src[7] = TypeParam::encode(std::nan(""));
    std::vector<S> dst(n);
    auto view = TensorView::contiguous(src.data(), TypeParam::kDType, {static_cast<int64_t>(n)}, "w");
    expect_same(compute_and_copy(view, dst.data()), compute(view));
    if (n > 0) EXPECT_EQ(std::memcmp(src.data(), dst.data(), n * sizeof(S)), 0);
  }
}

TYPED_TEST(Paired, DifferenceEqualsTheMaterialisedDifference) {
  using S = typename TypeParam::Storage;
  const std::size_t n = 20003;
  std::vector<S> a, b;
  const auto va = test::mixed_values(n, 1), vb = test::mixed_values(n, 2);
  for (std::size_t i = 0; i < n; ++i) {
    a.push_back(TypeParam::encode(va[i]));
    b.push_back(TypeParam::encode(i % 3 ? vb[i] : va[i]));  // a third unchanged: zero updates
  }
  // The reference takes the same difference per element, then a plain pass over it.
  std::vector<double> diff;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = TypeParam::kDType == DType::kFloat64
                         ? TypeParam::decode(a[i]) - TypeParam::decode(b[i])
                         : static_cast<float>(static_cast<float>(TypeParam::decode(a[i])) -
                                              static_cast<float>(TypeParam::decode(b[i])));
    diff.push_back(d);
  }
  const test::Reference r = test::reference(diff, 1e-7, 50);
  auto view_a = TensorView::contiguous(a.data(), TypeParam::kDType, {static_cast<int64_t>(n)}, "after");
  auto view_b = TensorView::contiguous(b.data(), TypeParam::kDType, {static_cast<int64_t>(n)}, "before");
  const Stats s = compute_difference(view_a, view_b);
  EXPECT_EQ(s.count, r.count);
  EXPECT_EQ(s.zero, r.zero);
  EXPECT_GE(s.zero, static_cast<int64_t>(n / 3));
  EXPECT_EQ(s.max, r.max);
  EXPECT_EQ(s.min, r.min);
  EXPECT_NEAR(s.sum_sq, r.sum_sq, 1e-10 * r.sum_sq);
}

TEST(Paired, ThreadsGiveTheSameAnswer) {
  const std::size_t n = 1 << 20;
  std::vector<float> a(n), b(n), copy(n);
  for (std::size_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i % 1000) * 1e-3f;
    b[i] = static_cast<float>(i % 777) * 1e-3f;
  }
  auto va = TensorView::contiguous(a.data(), DType::kFloat32, {static_cast<int64_t>(n)});
  auto vb = TensorView::contiguous(b.data(), DType::kFloat32, {static_cast<int64_t>(n)});
  StatsOptions two;
  two.threads = 2;
  expect_same(compute_difference(va, vb, two), compute_difference(va, vb));
  expect_same(compute_and_copy(va, copy.data(), two), compute(va));
  EXPECT_EQ(copy, a);
}

// The carried pass (one thread, and two for a tensor large enough to be split) gives the
// statistics of compute_difference and compute, and leaves the new value in the snapshot.
TEST(Paired, CarriedUpdateEqualsDifferenceAndValue) {
  const std::size_t n = 600001;  // > 2 x 2^18: two ranges with two threads, a ragged last block
  const auto va = test::mixed_values(n, 4), vb = test::mixed_values(n, 5);
  std::vector<float> after, before;
  for (std::size_t i = 0; i < n; ++i) after.push_back(static_cast<float>(va[i])), before.push_back(static_cast<float>(vb[i]));
  after[11] = std::nanf("");
  for (int threads : {1, 2}) {
    StatsOptions o;
    o.threads = threads;
    std::vector<float> snapshot = before;
    const auto a = TensorView::contiguous(after.data(), DType::kFloat32, {static_cast<int64_t>(n)}, "w");
    const auto b = TensorView::contiguous(before.data(), DType::kFloat32, {static_cast<int64_t>(n)}, "w before");
    const CarriedUpdate c = compute_update_and_carry(a, snapshot.data(), o);
    const Stats d = compute_difference(a, b, o), v = compute(a, o);
    expect_same(c.update, d);
    expect_same(c.value, v);
    EXPECT_EQ(c.update.nan, 1);
    EXPECT_EQ(std::memcmp(snapshot.data(), after.data(), n * sizeof(float)), 0);
  }
  float h[4] = {};
  EXPECT_THROW(compute_update_and_carry(TensorView::contiguous(h, DType::kFloat64, {1}), h), Error);
  EXPECT_THROW(compute_update_and_carry(TensorView::strided(h, DType::kFloat32, {2}, {2}), h), Error);
}

TEST(Paired, BadInputIsAnError) {
  float a[6] = {}, b[6] = {};
  auto strided = TensorView::strided(a, DType::kFloat32, {3}, {2}, "w");
  auto dense = TensorView::contiguous(b, DType::kFloat32, {3}, "v");
  EXPECT_THROW(compute_and_copy(strided, b), Error);
  EXPECT_THROW(compute_and_copy(dense, nullptr), Error);
  EXPECT_THROW(compute_difference(strided, dense), Error);
  EXPECT_THROW(compute_difference(dense, TensorView::contiguous(a, DType::kFloat32, {6})), Error);
  EXPECT_THROW(compute_difference(dense, TensorView::contiguous(a, DType::kFloat64, {3})), Error);
}

}  // namespace
}  // namespace gradscope
