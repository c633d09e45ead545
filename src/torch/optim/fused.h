// What the instrumented optimizers share: which tensors the fused passes take, and running a
// pass over a parameter in chunks on LibTorch's intra-op threads.
#pragma once

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>

#include <algorithm>
#include <vector>

#include "gradscope/core/optim/adam_pass.h"

namespace gradscope::torch::optim_internal {

/// float32, on the CPU, dense and contiguous.
inline bool plain_float(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat && t.layout() == at::kStrided &&
         t.is_contiguous();
}

/// The key of `param` in Optimizer::state(): its TensorImpl's address (a string of it before
/// LibTorch 2.2; gradscope builds against 2.7 and newer).
inline void* state_key(const at::Tensor& param) { return param.unsafeGetTensorImpl(); }

/// Chunks of kChunk elements run on LibTorch's intra-op threads, as its own optimizers'
/// element-wise operations do, each measuring its own; merged in chunk order, so the statistics
/// do not depend on the number of threads. `pass(begin, length, stats or nullptr)`.
constexpr int64_t kChunk = int64_t{1} << 16;

template <class Pass>
void run_chunked(int64_t n, bool measure, FusedStats* out, const Pass& pass) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<FusedStats> parts(measure ? static_cast<std::size_t>(chunks) : 0);
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k)
      pass(k * kChunk, std::min(kChunk, n - k * kChunk), measure ? &parts[static_cast<std::size_t>(k)] : nullptr);
  });
  if (!measure) return;
  FusedStats s;
  for (const FusedStats& part : parts) {
    s.value = merge(s.value, part.value);
    s.grad = merge(s.grad, part.grad);
    s.update = merge(s.update, part.update);
  }
  *out = s;
}

}  // namespace gradscope::torch::optim_internal
