// Peak extra memory of the ATen statistics path, measured: CPU tensors forced through it
// with every CPU allocation counted (counting_cpu_allocator.h). The bound is that of
// docs/devices.md: the tensor's own bytes, at least 1 MiB, at most 64 MiB, plus the few
// hundred bytes of per-chunk results.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "aten_stats.h"  // src/torch, internal
#include "counting_cpu_allocator.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {
namespace {

using test::CountingCpuAllocator;

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kResultSlack = 64 * 1024;  // per-chunk [k, fields] results and the merge

// Peak bytes above what was live before, while `run` computes and drops its results.
template <class F>
int64_t peak_extra_of(F run) {
  CountingCpuAllocator counting;
  run();
  EXPECT_LE(counting.live_extra(), 0) << "the statistics left memory behind";
  std::printf("peak extra: %lld bytes\n", static_cast<long long>(counting.peak_extra()));  // for docs/devices.md
  return counting.peak_extra();
}

TEST(AtenStatsMemory, TheCounterSeesEveryTensorAllocation) {
  // What the measurement rests on: a 4 MiB clone is counted, exactly, and so is its freeing.
  const at::Tensor t = at::zeros({kMiB});
  EXPECT_EQ(peak_extra_of([&] { at::Tensor c = t.clone(); }), 4 * kMiB);
  EXPECT_EQ(peak_extra_of([&] { at::Tensor c = t.to(at::kDouble); }), 8 * kMiB);
}

TEST(AtenStatsMemory, SixteenMillionFloatsStayUnder64MiB) {
  // 64 MiB of float32: unchunked, the path held about 18 bytes per element (288 MiB) at once.
  at::manual_seed(11);
  const at::Tensor t = at::randn({int64_t{1} << 24});
  const int64_t peak = peak_extra_of([&] { internal::aten_stats(t, "t", {}); });
  EXPECT_LE(peak, 64 * kMiB + kResultSlack);
  EXPECT_GT(peak, 32 * kMiB);  // the chunks are near the budget, not needlessly small
}

TEST(AtenStatsMemory, AFourMiBTensorNeedsAtMostItsOwnSize) {
  at::manual_seed(12);
  const at::Tensor t = at::randn({kMiB});
  EXPECT_LE(peak_extra_of([&] { internal::aten_stats(t, "t", {}); }), 4 * kMiB + kResultSlack);
}

TEST(AtenStatsMemory, NonContiguousAndDoubleTensorsStayUnderTheBound) {
  at::manual_seed(13);
  const at::Tensor t = at::randn({4096, 4096});
  const at::Tensor d = at::randn({3, 1 << 22}, at::kDouble);  // 96 MiB, rows over the chunk size
  EXPECT_LE(peak_extra_of([&] { internal::aten_stats(t.t(), "t", {}); }), 64 * kMiB + kResultSlack);
  EXPECT_LE(peak_extra_of([&] { internal::aten_stats(d.slice(1, 0, 1 << 22, 2), "d", {}); }),
            48 * kMiB + kResultSlack);  // the view's own 48 MiB
  EXPECT_LE(peak_extra_of([&] { internal::aten_stats(d.t(), "d", {}); }), 64 * kMiB + kResultSlack);
}

TEST(AtenStatsMemory, PerChannelStatsStayUnderTheBound) {
  // Channels along dim 1 of a [64, 16, 128, 128] activation (64 MiB): not contiguous per
  // channel, which the unchunked path copied whole before widening it.
  at::manual_seed(14);
  const at::Tensor x = at::randn({64, 16, 128, 128});
  for (int64_t dim : {0, 1, 3}) {
    SCOPED_TRACE("dim " + std::to_string(dim));
    const int64_t peak = peak_extra_of([&] {
      internal::AtenStatsBatch batch({});
      batch.add_slices(x, dim, "x");
      batch.resolve();
    });
    EXPECT_LE(peak, 64 * kMiB + kResultSlack);
  }
}

}  // namespace
}  // namespace gradscope::torch
