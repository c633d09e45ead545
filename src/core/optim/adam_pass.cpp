#include "gradscope/core/optim/adam_pass.h"

#include <cmath>

#include "optim/internal/adam_block.h"
#include "optim/internal/blocks.h"

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

// The update's code follows the same choice as the stats kernels that measure it.
internal::AdamBlock adam_block(Kernel kernel) {
  const Kernel resolved = resolve_kernel(kernel, "adam");
#ifdef GRADSCOPE_HAVE_AVX2_KERNELS
  if (resolved == Kernel::kAvx2) return internal::adam_block_avx2;
#endif
  (void)resolved;
  return internal::adam_block_portable;
}

}  // namespace

void adam_pass(float* p, const float* g, float* m, float* v, int64_t n, const AdamCoefficients& c,
               const StatsOptions& options, FusedStats* stats) {
  const internal::AdamBlock block = adam_block(options.kernel);
  internal::measured_blocks(p, g, n, options, stats, "adam", [&](int64_t k, int64_t len, float* delta) {
    block(p + k, g + k, m + k, v + k, len, c, delta);
  });
}

}  // namespace gradscope
