// One pass of Adam over a float32 parameter that also measures it: the statistics the audit
// records of the parameter before the step, of its gradient and of the exact update (after -
// before), with every byte of the parameter, gradient and moments read once.
//
//   gradscope::AdamCoefficients c = gradscope::adam_coefficients(lr, 0.9, 0.999, 1e-8, 0, step);
//   gradscope::FusedStats s;
//   gradscope::adam_pass(p, g, m, v, n, c, options, &s);   // nullptr: update only
//
// Blocks of kAdamBlock elements: the stats kernels (stats.h) read a block of the parameter and
// of the gradient, the update is applied to it and its exact change, kept in a block-sized
// buffer, is measured, all while the block is in the first-level cache. So the statistics are
// the audit's own kernels' (the same Stats up to the order of double sums), and the memory
// traffic is the update's alone. The update follows LibTorch 1.13's Adam (torch/optim/adam.h)
// in float arithmetic with its float-rounded coefficients: m = b1 m + (1 - b1) g, v = b2 v +
// (1 - b2) g^2, p += -(lr / (1 - b1^t)) m / (sqrt(v) / sqrt(1 - b2^t) + eps), with weight decay
// g += wd p first (L2, Adam) or p *= 1 - lr wd first (decoupled, AdamW).
#pragma once

#include <cstdint>

#include "gradscope/core/stats/stats.h"

namespace gradscope {

/// Elements per block: 3 blocks of float (parameter, gradient, update) in 24 KB of L1.
constexpr int64_t kAdamBlock = 2048;

/// The step's coefficients, rounded to float as ATen's float kernels round their scalars.
struct AdamCoefficients {
  float beta1 = 0.9f, one_minus_beta1 = 0.1f, beta2 = 0.999f, one_minus_beta2 = 0.001f;
  float sqrt_bias_correction2 = 1;  ///< sqrt(1 - beta2^step)
  float eps = 1e-8f;
  float neg_step_size = 0;          ///< -lr / (1 - beta1^step)
  float weight_decay = 0;           ///< L2: added to the gradient (Adam)
  float decay_factor = 1;           ///< decoupled: the parameter is scaled by this first (AdamW)
};

/// Coefficients for step `step` (1 for the first). `decoupled`: AdamW's weight decay.
AdamCoefficients adam_coefficients(double lr, double beta1, double beta2, double eps, double weight_decay,
                                   int64_t step, bool decoupled = false);

/// What one pass measured; each is the Stats `compute` gives of the same elements.
struct FusedStats {
  Stats value;   ///< the parameter before the step
  Stats grad;    ///< the gradient as given (before weight decay)
  Stats update;  ///< the parameter after minus before, in float
};

/// Updates n elements of p in place with Adam (m, v: its moments, updated too), measuring into
/// `stats` (nullptr: not measured). p, g, m, v must not overlap.
void adam_pass(float* p, const float* g, float* m, float* v, int64_t n, const AdamCoefficients& c,
               const StatsOptions& options, FusedStats* stats);

}  // namespace gradscope
