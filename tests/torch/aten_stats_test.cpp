// The ATen path (tensors not on the CPU) against the fused CPU kernel on the same data: the
// CPU tensors here are forced through ATen, as a GPU tensor would go. Tolerances are those of
// docs/devices.md: counts, min, max and max |x| exact; sums within 2 n u of the sum of
// magnitudes (u = 2^-53), the worst case of two double summations in different orders.
#include "aten_stats.h"  // src/torch, internal

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../common/error_of.h"
#include "aten_stats_expect.h"
#include "audit/channel_math.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {
namespace {

using internal::AtenStatsBatch;
using internal::aten_stats;
using gradscope::test::error_of;
using test::expect_agree;
using test::expect_paths_agree;
using test::ForceAten;
using test::kInf;

const auto kFloatTypes = {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16};

TEST(AtenStats, RandomTensorsOfEveryDtypeAgreeWithTheFusedKernel) {
  at::manual_seed(5);
  for (auto type : kFloatTypes)
    for (const std::vector<int64_t>& shape : std::vector<std::vector<int64_t>>{{37, 29}, {100003}, {3, 4, 5, 6}})
      expect_paths_agree((at::randn(shape) * 30).to(type));
}

TEST(AtenStats, NaNInfZerosAndThresholdEdgesCountTheSame) {
  // Values at and next to dead_eps (1e-7) and saturation (50): the ATen path compares in
  // double, as the fused kernel does, so no threshold is rounded to the tensor's precision.
  const std::vector<double> v = {NAN, kInf, -kInf, 0.0, -0.0, 1e-8, -1e-7, 1.2e-7, 50.0,
                                 std::nextafter(50.0, 100.0), -60.0, 3.5, NAN, kInf, 49.99};
  for (auto type : kFloatTypes) expect_paths_agree(at::tensor(v, at::kDouble).to(type));
  StatsOptions wide;
  wide.dead_eps = 0.5;
  wide.saturation = 1.0;
  for (auto type : kFloatTypes) expect_paths_agree(at::tensor(v, at::kDouble).to(type), wide);
}

TEST(AtenStats, NoFiniteValueGivesTheEmptyExtremes) {
  const Stats s = aten_stats(at::tensor({NAN, kInf, -kInf}), "t", {});
  EXPECT_EQ(s.finite, 0);
  EXPECT_EQ(s.nan, 1);
  EXPECT_EQ(s.pos_inf, 1);
  EXPECT_EQ(s.neg_inf, 1);
  EXPECT_EQ(s.min, kInf);
  EXPECT_EQ(s.max, -kInf);
  EXPECT_EQ(s.max_abs, 0.0);
  EXPECT_EQ(s.sum_sq, 0.0);
  expect_paths_agree(at::tensor({NAN, kInf, -kInf}));
}

TEST(AtenStats, ZerosEmptyOneElementAndScalars) {
  expect_paths_agree(at::zeros({64, 3}));
  expect_paths_agree(at::zeros({0}));
  expect_paths_agree(at::zeros({3, 0, 2}, at::kHalf));
  expect_paths_agree(at::full({1}, -2.5));
  expect_paths_agree(at::scalar_tensor(7.25, at::kDouble));
  const Stats empty = aten_stats(at::zeros({0}), "t", {});
  EXPECT_EQ(empty.count, 0);
  EXPECT_EQ(empty.min, kInf);
  const Stats zeros = aten_stats(at::zeros({64, 3}), "t", {});
  EXPECT_EQ(zeros.zero, 192);
  EXPECT_EQ(zeros.min, 0.0);
}

TEST(AtenStats, NonContiguousViewsAreReadWithoutACopyToContiguous) {
  at::manual_seed(6);
  const at::Tensor base = at::randn({40, 30});
  for (auto type : kFloatTypes) {
    const at::Tensor t = base.to(type);
    expect_paths_agree(t.t());                                  // transposed
    expect_paths_agree(t.slice(0, 1, 40, 3).slice(1, 2, 30, 4));  // stepped
    expect_paths_agree(t.select(1, 7));                         // a column
    expect_paths_agree(t.select(0, 2).unsqueeze(0).expand({5, 30}));  // stride 0
    expect_paths_agree(t.flip({0}));
  }
}

TEST(AtenStats, StatsOfTakesTheAtenPathWhenForced) {
  at::manual_seed(7);
  at::Tensor t = at::randn({513, 17}) * 100;
  t[3][4] = NAN;
  ForceAten off(false);
  const Stats fused = stats_of(t, "t");
  EXPECT_FALSE(internal::use_aten_stats(t));
  Stats aten;
  {
    ForceAten on(true);
    EXPECT_TRUE(internal::use_aten_stats(t));
    aten = stats_of(t, "t");
  }
  expect_agree(fused, aten);
  EXPECT_EQ(aten.nan, 1);
  // Bit for bit what the ATen path gives (the run is deterministic), and the fused kernel
  // again once the switch is off.
  EXPECT_EQ(aten.sum_sq, aten_stats(t, "t", {}).sum_sq);
  EXPECT_EQ(stats_of(t, "t").sum_sq, fused.sum_sq);
  // On this data the two summation orders differ in the last bits (measured: 86562588.390574127
  // fused, ...217 ATen): proof that the forced call did not take the fused kernel.
  EXPECT_NE(aten.sum_sq, fused.sum_sq);
}

TEST(AtenStats, PerChannelStatsAgreeAndCopyOnce) {
  at::manual_seed(8);
  at::Tensor x = at::randn({16, 6, 5, 5}) * 40;
  x[2][3][1][1] = -kInf;
  for (int64_t dim : {1, 0, -1}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    const std::vector<Stats> fused = [&] {
      ForceAten off(false);
      return internal::per_channel_stats(x, dim, {});
    }();
    ForceAten on(true);
    const std::vector<Stats> aten = internal::per_channel_stats(x, dim, {});
    ASSERT_EQ(aten.size(), fused.size());
    for (std::size_t c = 0; c < fused.size(); ++c) expect_agree(fused[c], aten[c]);
  }
  AtenStatsBatch batch({});
  EXPECT_EQ(batch.add_slices(x, 1, "x"), 0u);
  EXPECT_EQ(batch.add_slices(at::zeros({4, 0}), 0, "empty rows"), 6u);  // 4 channels of nothing
  EXPECT_EQ(batch.add_slices(at::zeros({0, 3}), 0, "no channels"), 10u);
  const std::vector<Stats> all = batch.resolve();
  ASSERT_EQ(all.size(), 10u);
  EXPECT_EQ(all[2].neg_inf, 0);
  EXPECT_EQ(all[3].neg_inf, 1);
  EXPECT_EQ(all[9].count, 0);
  EXPECT_EQ(batch.copies(), 1u);
}

TEST(AtenStats, ABatchResolvesEveryTensorInOrderWithOneCopyPerDevice) {
  at::manual_seed(9);
  const at::Tensor a = at::randn({100}), b = at::randn({7, 3}, at::kDouble).t(), c = at::zeros({0});
  AtenStatsBatch batch({});
  EXPECT_EQ(batch.add(a, "a"), 0u);
  EXPECT_EQ(batch.add(c, "c"), 1u);
  EXPECT_EQ(batch.add(b, "b"), 2u);
  EXPECT_EQ(batch.size(), 3u);
  const std::vector<Stats> all = batch.resolve();
  EXPECT_EQ(batch.copies(), 1u);  // all three on the CPU: one copy
  EXPECT_EQ(batch.size(), 0u);
  ASSERT_EQ(all.size(), 3u);
  expect_agree(compute(view_of(a, "a")), all[0]);
  EXPECT_EQ(all[1].count, 0);
  expect_agree(compute(view_of(b, "b")), all[2]);
  EXPECT_TRUE(batch.resolve().empty());  // emptied: nothing queued, nothing copied
  EXPECT_EQ(batch.copies(), 1u);
}

TEST(AtenStats, BadInputGetsTheFusedPathsMessages) {
  StatsOptions bad;
  bad.dead_eps = -1;
  EXPECT_EQ(error_of([&] { aten_stats(at::zeros({3}), "t", bad); }),
            error_of([&] { compute(view_of(at::zeros({3}), "t"), bad); }));
  EXPECT_EQ(error_of([&] { aten_stats(at::zeros({3}, at::kLong), "t", {}); }),
            error_of([&] { view_of(at::zeros({3}, at::kLong), "t"); }));
  EXPECT_EQ(error_of([&] { aten_stats(at::zeros({3}).to_sparse(), "t", {}); }),
            error_of([&] { view_of(at::zeros({3}).to_sparse(), "t"); }));
  EXPECT_EQ(error_of([&] { aten_stats(at::Tensor(), "t", {}); }), "tensor 't': undefined tensor");
  // The meta device has shapes but no data: refused by name, before any reduction.
  const at::Tensor meta = at::zeros({3}, at::TensorOptions().device(at::kMeta));
  EXPECT_EQ(error_of([&] { stats_of(meta, "m"); }), "tensor 'm': on device meta, which holds no data to measure");
  EXPECT_EQ(error_of([&] { AtenStatsBatch({}).add_slices(at::zeros({2, 3}), 2, "x"); }),
            "tensor 'x': channel dim 2 out of range for a tensor with 2 dims");
}

}  // namespace
}  // namespace gradscope::torch
