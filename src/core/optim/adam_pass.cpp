#include "gradscope/core/optim/adam_pass.h"

#include <algorithm>
#include <cmath>

#include "optim/internal/adam_block.h"
#include "stats/internal/kernels.h"

namespace gradscope {

AdamCoefficients adam_coefficients(double lr, double beta1, double beta2, double eps, double weight_decay,
                                   int64_t step, bool decoupled) {
  AdamCoefficients c;
  c.beta1 = static_cast<float>(beta1);
  c.one_minus_beta1 = static_cast<float>(1 - beta1);
  c.beta2 = static_cast<float>(beta2);
  c.one_minus_beta2 = static_cast<float>(1 - beta2);
  const double t = static_cast<double>(step);
  c.sqrt_bias_correction2 = static_cast<float>(std::sqrt(1 - std::pow(beta2, t)));
  c.eps = static_cast<float>(eps);
  c.neg_step_size = static_cast<float>(-(lr / (1 - std::pow(beta1, t))));
  if (decoupled)
    c.decay_factor = static_cast<float>(1 - lr * weight_decay);
  else
    c.weight_decay = static_cast<float>(weight_decay);
  return c;
}

namespace {

internal::AdamBlock adam_block(Kernel kernel) {
#ifdef GRADSCOPE_HAVE_AVX2_KERNELS
  if (kernel != Kernel::kScalar && avx2_available()) return internal::adam_block_avx2;
#endif
  (void)kernel;
  return internal::adam_block_portable;
}

}  // namespace

void adam_pass(float* p, const float* g, float* m, float* v, int64_t n, const AdamCoefficients& c,
               const StatsOptions& options, FusedStats* stats) {
  float delta[kAdamBlock];
  const internal::AdamBlock update = adam_block(options.kernel);
  if (!stats) {
    for (int64_t b = 0; b < n; b += kAdamBlock) update(p + b, g + b, m + b, v + b, std::min(kAdamBlock, n - b), c, delta);
    return;
  }
  internal::check_options(options, "adam");
  const internal::KernelParams kp = internal::make_kernel_params(options.dead_eps, options.saturation);
  const internal::ContiguousKernel kernel = internal::kernels(options.kernel).f32;
  FusedStats s;
  for (int64_t b = 0; b < n; b += kAdamBlock) {
    const int64_t k = std::min(kAdamBlock, n - b);
    kernel(p + b, k, kp, s.value);
    kernel(g + b, k, kp, s.grad);
    update(p + b, g + b, m + b, v + b, k, c, delta);
    kernel(delta, k, kp, s.update);
  }
  *stats = s;
}

}  // namespace gradscope
