// Contiguous kernels: each adds the summary of n elements at `data` into `acc`.
#pragma once

#include <cstdint>

#include "gradscope/core/stats.h"

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
/// Only valid when avx2_available().
const KernelTable& avx2_kernels();

}  // namespace gradscope::internal
