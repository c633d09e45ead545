// merge() of chunks, threads and steps equals one pass over all the data.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "gradscope/core/stats/stats.h"
#include "test_data.h"

namespace gradscope {
namespace {

using test::expect_same;

std::vector<float> data(std::size_t n) {
  std::vector<float> x;
  for (double v : test::mixed_values(n, 42)) x.push_back(static_cast<float>(v));
  x[17] = std::nanf("");
  x[n / 2] = INFINITY;
  x[n - 1] = -INFINITY;
  return x;
}

TEST(Merge, ChunksEqualOnePass) {
  const auto x = data(200003);
  const Stats whole = compute(TensorView::contiguous(x.data(), DType::kFloat32, {200003}));
  for (std::size_t chunk : {1u, 7u, 64u, 1000u, 65537u}) {
    Stats acc;
    for (std::size_t i = 0; i < x.size(); i += chunk) {
      const auto len = static_cast<int64_t>(std::min(chunk, x.size() - i));
      acc = merge(acc, compute(TensorView::contiguous(x.data() + i, DType::kFloat32, {len})));
    }
    SCOPED_TRACE(chunk);
    expect_same(acc, whole);
  }
}

TEST(Merge, ThreadsEqualOnePass) {
  const auto x = data(3000017);  // large enough for several threads to take part
  auto view = TensorView::contiguous(x.data(), DType::kFloat32, {3000017});
  const Stats one = compute(view);
  for (int threads : {2, 3, 4, 7}) {
    StatsOptions o;
    o.threads = threads;
    SCOPED_TRACE(threads);
    expect_same(compute(view, o), one);
  }
}

TEST(Merge, ThreadsCoverEveryElementWhenChunksDivideEvenly) {
  // 3 x 262144 + 1: the per-thread share is a whole number of vectors plus a remainder.
  const std::size_t n = 3 * 262144 + 1;
  auto x = data(n);
  x[n - 1] = 1e6f;  // the last element alone decides max
  auto view = TensorView::contiguous(x.data(), DType::kFloat32, {static_cast<int64_t>(n)});
  for (int threads : {2, 3}) {
    StatsOptions o;
    o.threads = threads;
    const Stats s = compute(view, o);
    EXPECT_EQ(s.count, static_cast<int64_t>(n));
    EXPECT_EQ(s.max, 1e6);
  }
}

TEST(Merge, IsAssociativeAndCommutative) {
  const auto x = data(3000);
  auto part = [&](int64_t from, int64_t n) {
    return compute(TensorView::contiguous(x.data() + from, DType::kFloat32, {n}));
  };
  const Stats a = part(0, 1000), b = part(1000, 999), c = part(1999, 1001);
  expect_same(merge(merge(a, b), c), merge(a, merge(b, c)));
  expect_same(merge(a, b), merge(b, a));
  expect_same(merge(a, Stats{}), a);  // the empty summary is the identity
}

// A run file can hold any count (damage, or a hand-edited file): merging such summaries
// saturates at the int64 limits instead of overflowing, which is undefined behaviour (the
// run_db fuzz target found it: ReportBuilder merges every step of a node).
TEST(Merge, CountsSaturateAtTheLimitsInsteadOfOverflowing) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  const auto all = [](int64_t v) {
    Stats s;
    s.count = s.finite = s.nan = s.pos_inf = s.neg_inf = s.zero = s.saturated = v;
    return s;
  };
  const auto counts = [](const Stats& s) {
    return std::vector<int64_t>{s.count,   s.finite, s.nan,      s.pos_inf,
                                s.neg_inf, s.zero,   s.saturated};
  };
  EXPECT_EQ(counts(merge(all(kMax), all(256))), std::vector<int64_t>(7, kMax));
  EXPECT_EQ(counts(merge(all(256), all(kMax - 1))), std::vector<int64_t>(7, kMax));
  EXPECT_EQ(counts(merge(all(kMin), all(-1))), std::vector<int64_t>(7, kMin));
  EXPECT_EQ(counts(merge(all(kMax), all(kMin))), std::vector<int64_t>(7, -1));  // exact
  EXPECT_EQ(counts(merge(all(3), all(4))), std::vector<int64_t>(7, 7));
  EXPECT_EQ(all(kMax).inf(), kMax);
  EXPECT_EQ(all(kMin).inf(), kMin);
  EXPECT_EQ(all(5).inf(), 10);
}

TEST(Merge, StepsOfDifferentDtypesCombine) {
  // A step summary in f16 and one in f32 merge like one pass over both value lists.
  std::vector<uint16_t> h;
  std::vector<float> f;
  std::vector<double> all;
  for (double v : test::mixed_values(500, 9)) {
    h.push_back(float_to_half(static_cast<float>(v)));
    all.push_back(half_to_float(h.back()));
  }
  for (double v : test::mixed_values(300, 10)) {
    f.push_back(static_cast<float>(v));
    all.push_back(f.back());
  }
  const Stats m = merge(compute(TensorView::contiguous(h.data(), DType::kFloat16, {500})),
                        compute(TensorView::contiguous(f.data(), DType::kFloat32, {300})));
  const test::Reference r = test::reference(all, 1e-7, 50);
  EXPECT_EQ(m.count, r.count);
  EXPECT_EQ(m.zero, r.zero);
  EXPECT_EQ(m.saturated, r.saturated);
  EXPECT_EQ(m.max_abs, r.max_abs);
  EXPECT_NEAR(m.sum_sq, r.sum_sq, 1e-12 * r.sum_sq);
}

}  // namespace
}  // namespace gradscope

namespace gradscope {
namespace {

TEST(Merge, ThreadsOnAStridedViewEqualOnePass) {
  const auto x = data(3000000);
  // Every other column of a 1000 x 3000 matrix: 1.5M elements, gathered.
  auto view = TensorView::strided(x.data(), DType::kFloat32, {1000, 1500}, {3000, 2});
  const Stats one = compute(view);
  EXPECT_EQ(one.count, 1500000);
  StatsOptions o;
  o.threads = 3;
  expect_same(compute(view, o), one);
}

}  // namespace
}  // namespace gradscope
