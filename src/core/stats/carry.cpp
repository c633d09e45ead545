#include "gradscope/core/stats/carry.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "gradscope/core/error.h"
#include "stats/internal/kernels.h"

namespace gradscope {

CarriedUpdate compute_update_and_carry(const TensorView& after, float* before, const StatsOptions& options) {
  if (after.dtype() != DType::kFloat32 || !after.is_contiguous())
    throw Error("compute_update_and_carry: needs a contiguous float32 view");
  internal::check_options(options, "update");
  const internal::KernelParams kp = internal::make_kernel_params(options.dead_eps, options.saturation);
  const internal::ContiguousKernel kernel = internal::kernels(options.kernel, "stats").f32;
  constexpr int64_t kBlock = 2048;
  const float* a = static_cast<const float*>(after.data());
  // Large tensors in ranges on their own threads, as compute_difference splits them.
  const std::vector<internal::Range> ranges = internal::split_ranges(after.numel(), options.threads);
  std::vector<CarriedUpdate> parts(ranges.size());
  internal::run_ranges(ranges, [&](std::size_t t, const internal::Range& r) {
    float delta[kBlock];
    CarriedUpdate& part = parts[t];
    for (int64_t k = r.begin; k < r.end; k += kBlock) {
      const int64_t len = std::min(kBlock, r.end - k);
      for (int64_t i = 0; i < len; ++i) delta[i] = a[k + i] - before[k + i];
      kernel(delta, len, kp, part.update);
      kernel(a + k, len, kp, part.value);
      std::memcpy(before + k, a + k, static_cast<std::size_t>(len) * sizeof(float));
    }
  });
  CarriedUpdate c;
  for (const CarriedUpdate& p : parts) c.update = merge(c.update, p.update), c.value = merge(c.value, p.value);
  return c;
}

}  // namespace gradscope
