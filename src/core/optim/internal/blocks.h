// The walk both fused passes make: blocks of kAdamBlock elements, each measured by the stats
// kernels (the parameter and gradient before the update, the exact change after it) while it is
// in the first-level cache. `update(offset, length, delta)` updates one block and writes
// after - before into `delta`.
#pragma once

#include <algorithm>

#include "gradscope/core/optim/adam_pass.h"
#include "stats/internal/kernels.h"

namespace gradscope::internal {

template <class Update>
void measured_blocks(const float* p, const float* g, int64_t n, const StatsOptions& options, FusedStats* stats,
                     const char* name, const Update& update) {
  float delta[kAdamBlock];
  // Resolved whether or not stats are taken: kAvx2 on a CPU without it is an error either way.
  const ContiguousKernel kernel = kernels(options.kernel, name).f32;
  if (!stats) {
    for (int64_t k = 0; k < n; k += kAdamBlock) update(k, std::min(kAdamBlock, n - k), delta);
    return;
  }
  check_options(options, name);
  const KernelParams kp = make_kernel_params(options.dead_eps, options.saturation);
  FusedStats s;
  for (int64_t k = 0; k < n; k += kAdamBlock) {
    const int64_t len = std::min(kAdamBlock, n - k);
    kernel(p + k, len, kp, s.value);
    kernel(g + k, len, kp, s.grad);
    update(k, len, delta);
    kernel(delta, len, kp, s.update);
  }
  *stats = s;
}

}  // namespace gradscope::internal
