// make bench-aten_stats: what the ATen statistics path (taken by tensors off the CPU) costs
// when forced on a CPU tensor, against the fused kernel and one LibTorch sum(), on the same
// 16M-element float32 tensor (64 MiB), single-threaded, the three interleaved in each
// repetition; medians reported. On a GPU the ATen path runs on the device and these CPU times
// say nothing about it (docs/devices.md); they bound what GRADSCOPE_FORCE_ATEN_STATS costs.
// glibc keeps freed memory (mallopt, as bench/audit_bench.cpp does): the ATen path allocates
// tensor-sized temporaries, and without it every call faulted their pages in again (16 s a
// call here instead of milliseconds); a GPU's caching allocator keeps them the same way.
// Last line: one JSON object.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <limits>
#include <vector>

#include "aten_stats.h"  // src/torch, internal
#include "gradscope/core/stats/stats.h"
#include "gradscope/torch/tensor.h"

namespace {

volatile double g_sink = 0;  // keeps every result alive

double seconds(const std::function<void()>& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  at::set_num_threads(1);
  at::manual_seed(1);
  constexpr int64_t kElements = int64_t{1} << 24;
  constexpr int kReps = 9;
  const at::Tensor t = at::randn({kElements});
  const gradscope::TensorView view = gradscope::torch::view_of(t, "bench");
  const gradscope::StatsOptions options;
  std::vector<double> fused, aten, sum;
  for (int r = 0; r <= kReps; ++r) {  // repetition 0 warms up and is dropped
    const double f = seconds([&] { g_sink = g_sink + gradscope::compute(view, options).sum_sq; });
    const double a = seconds([&] { g_sink = g_sink + gradscope::torch::internal::aten_stats(t, "bench", options).sum_sq; });
    const double s = seconds([&] { g_sink = g_sink + t.sum().item<double>(); });
    if (r == 0) continue;
    fused.push_back(f);
    aten.push_back(a);
    sum.push_back(s);
  }
  const double fm = median(fused), am = median(aten), sm = median(sum);
  std::printf("float32, %lld elements, 1 thread, median of %d\n", static_cast<long long>(kElements), kReps);
  std::printf("  fused kernel      %8.2f ms\n", fm * 1e3);
  std::printf("  ATen path (CPU)   %8.2f ms  (%.1fx the fused kernel)\n", am * 1e3, am / fm);
  std::printf("  one sum()         %8.2f ms\n", sm * 1e3);
  std::printf("{\"bench\":\"aten_stats\",\"fused_ms\":%.3f,\"aten_ms\":%.3f,\"sum_ms\":%.3f,\"aten_over_fused\":%.2f}\n",
              fm * 1e3, am * 1e3, sm * 1e3, am / fm);
  return 0;
}
