#include "gradscope/core/stats/carry.h"

#include <algorithm>
#include <cstring>

#include "gradscope/core/error.h"
#include "stats/internal/kernels.h"

namespace gradscope {

CarriedUpdate compute_update_and_carry(const TensorView& after, float* before, const StatsOptions& options) {
  if (after.dtype() != DType::kFloat32 || !after.is_contiguous())
    throw Error("compute_update_and_carry: needs a contiguous float32 view");
  internal::check_options(options, "update");
  const internal::KernelParams kp = internal::make_kernel_params(options.dead_eps, options.saturation);
  const internal::ContiguousKernel kernel = internal::kernels(options.kernel).f32;
  constexpr int64_t kBlock = 2048;
  float delta[kBlock];
  const float* a = static_cast<const float*>(after.data());
  const int64_t n = after.numel();
  CarriedUpdate c;
  for (int64_t k = 0; k < n; k += kBlock) {
    const int64_t len = std::min(kBlock, n - k);
    for (int64_t i = 0; i < len; ++i) delta[i] = a[k + i] - before[k + i];
    kernel(delta, len, kp, c.update);
    kernel(a + k, len, kp, c.value);
    std::memcpy(before + k, a + k, static_cast<std::size_t>(len) * sizeof(float));
  }
  return c;
}

}  // namespace gradscope
