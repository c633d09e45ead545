// One pass of SGD (momentum, dampening, Nesterov, L2 weight decay) over a float32 parameter that
// also measures it, as adam_pass.h does for Adam: the parameter before the step, its gradient and
// the exact update, with every byte read once.
//
//   gradscope::SgdCoefficients c = gradscope::sgd_coefficients(lr, momentum, dampening, wd,
//                                                              nesterov, first_step);
//   gradscope::sgd_pass(p, g, momentum_buffer, n, c, options, &stats);
//
// The update is LibTorch 1.13's SGD (torch/optim/sgd.h) in float arithmetic with float-rounded
// coefficients: d = g + wd p; with momentum, b = d on the first step, else b = m b + (1 - damp) d,
// and d = d + m b (Nesterov) or b; p += -lr d.
#pragma once

#include <cstdint>

#include "gradscope/core/optim/adam_pass.h"

namespace gradscope {

struct SgdCoefficients {
  float neg_lr = 0;
  float momentum = 0;
  float one_minus_dampening = 1;
  float weight_decay = 0;
  bool nesterov = false;
  bool first_step = true;  ///< the momentum buffer starts as the first step's d
};

SgdCoefficients sgd_coefficients(double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                                 bool first_step);

/// Updates n elements of p (and the momentum buffer `b`, n floats, when momentum != 0; may be
/// nullptr otherwise), measuring into `stats` (nullptr: not measured).
void sgd_pass(float* p, const float* g, float* b, int64_t n, const SgdCoefficients& c, const StatsOptions& options,
              FusedStats* stats);

}  // namespace gradscope
