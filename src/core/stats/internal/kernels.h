// Contiguous kernels: each adds the summary of n elements at `data` into `acc`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "gradscope/core/stats/stats.h"

namespace gradscope::internal {

/// Thresholds in both precisions. A float f satisfies f <= dead_eps_f exactly when
/// double(f) <= dead_eps, so the float kernels count the same elements as a double reference.
struct KernelParams {
  double dead_eps;
  double saturation;
  float dead_eps_f;
  float saturation_f;
};

KernelParams make_kernel_params(double dead_eps, double saturation);

using ContiguousKernel = void (*)(const void* data, int64_t n, const KernelParams& params,
                                  Stats& acc);

struct KernelTable {
  ContiguousKernel f32;
  ContiguousKernel f64;
  ContiguousKernel f16;
  ContiguousKernel bf16;

  ContiguousKernel for_dtype(DType dtype) const;
};

const KernelTable& scalar_kernels();
/// The table resolve_kernel(kernel, who) selects (kernel.h: kAuto the fastest this CPU runs;
/// kAvx2 on a CPU without it throws Error naming `who`).
const KernelTable& kernels(Kernel kernel, std::string_view who);

/// Throws Error naming `name` for options no kernel can honour.
void check_options(const StatsOptions& options, const std::string& name);

/// [begin, end) of one thread's share of a tensor.
struct Range {
  int64_t begin, end;
};
/// [0, n) in up to `max_threads` chunks of whole vectors (one for small inputs), in order.
std::vector<Range> split_ranges(int64_t n, int max_threads);
/// Runs `run(index, range)` for every range, each on its own thread (the caller takes the first).
void run_ranges(const std::vector<Range>& ranges, const std::function<void(std::size_t, const Range&)>& run);
/// Splits [0, n) into up to `max_threads` chunks (large inputs only), runs `run` on each with
/// its own accumulator and merges them.
Stats parallel_ranges(int64_t n, int max_threads, const std::function<void(int64_t, int64_t, Stats&)>& run);
/// Only valid when avx2_available().
const KernelTable& avx2_kernels();

}  // namespace gradscope::internal
