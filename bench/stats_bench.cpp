// make bench-stats: the fused Stats pass against one LibTorch sum() (the memory-bound
// reference) and against the nine separate LibTorch reductions a user would otherwise write.
// Single-threaded, 64 MiB per dtype, the three sides interleaved in each repetition; the
// median of the repetitions is reported. Last line: one JSON object (f32 figures).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

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

struct Figures {
  double fused_s, sum_s, naive_s;  // medians; naive_s < 0 when LibTorch lacks an op here
};

void naive_reductions(const at::Tensor& t) {
  double s = 0;
  s += t.abs().mean().item<double>();
  s += t.abs().max().item<double>();
  s += t.norm().item<double>();
  s += static_cast<double>(t.isnan().sum().item<int64_t>());
  s += static_cast<double>(t.isinf().sum().item<int64_t>());
  s += static_cast<double>(t.eq(0).sum().item<int64_t>());
  s += t.min().item<double>();
  s += t.max().item<double>();
  s += t.std().item<double>();
  g_sink = g_sink + s;
}

Figures measure(const at::Tensor& t, int reps) {
  const gradscope::TensorView view = gradscope::torch::view_of(t, "bench");
  bool naive_ok = true;
  try {
    naive_reductions(t);  // warm-up; also finds ops LibTorch lacks for this dtype on CPU
  } catch (const std::exception&) {
    naive_ok = false;
  }
  std::vector<double> fused, sum, naive;
  for (int r = 0; r < reps; ++r) {
    fused.push_back(seconds([&] { g_sink = g_sink + gradscope::compute(view).sum_sq; }));
    sum.push_back(seconds([&] { g_sink = g_sink + t.sum().item<double>(); }));
    if (naive_ok) naive.push_back(seconds([&] { naive_reductions(t); }));
  }
  return {median(fused), median(sum), naive_ok ? median(naive) : -1.0};
}

}  // namespace

int main() {
  at::set_num_threads(1);
  constexpr int64_t kBytes = int64_t{64} << 20;
  constexpr int kReps = 11;
  std::printf("single thread, %lld MiB per tensor, median of %d interleaved repetitions; avx2 kernel: %s\n",
              static_cast<long long>(kBytes >> 20), kReps, gradscope::avx2_available() ? "yes" : "no");
  std::printf("%-9s %10s %12s %12s %12s %10s %12s\n", "dtype", "fused_ms", "fused_GB/s",
              "torch_sum_ms", "sum_GB/s", "naive_ms", "fused/sum");
  Figures f32{};
  double f32_gbps = 0, sum_gbps = 0;
  for (auto type : {at::kFloat, at::kHalf, at::kBFloat16}) {
    const int64_t n = kBytes / static_cast<int64_t>(c10::elementSize(type));
    at::manual_seed(1);
    const at::Tensor t = at::randn({n}).to(type);
    const Figures f = measure(t, kReps);
    const double fused_gbps = kBytes / f.fused_s / 1e9;
    const double torch_gbps = kBytes / f.sum_s / 1e9;
    char naive[32] = "n/a";
    if (f.naive_s > 0) std::snprintf(naive, sizeof naive, "%.2f", f.naive_s * 1e3);
    std::printf("%-9s %10.2f %12.2f %12.2f %12.2f %10s %12.2f\n", c10::toString(type), f.fused_s * 1e3,
                fused_gbps, f.sum_s * 1e3, torch_gbps, naive, fused_gbps / torch_gbps);
    if (type == at::kFloat) {
      f32 = f;
      f32_gbps = fused_gbps;
      sum_gbps = torch_gbps;
    }
  }
  std::printf(
      "{\"bench\":\"stats\",\"fused_gbps\":%.3f,\"torch_sum_gbps\":%.3f,\"fused_ms\":%.3f,"
      "\"naive_ms\":%.3f,\"ratio_vs_sum\":%.3f,\"speedup_vs_naive\":%.2f}\n",
      f32_gbps, sum_gbps, f32.fused_s * 1e3, f32.naive_s * 1e3, f32_gbps / sum_gbps,
      f32.naive_s / f32.fused_s);
  return 0;
}
