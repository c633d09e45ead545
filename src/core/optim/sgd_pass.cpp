#include "gradscope/core/optim/sgd_pass.h"


#include "optim/internal/blocks.h"

namespace gradscope {

SgdCoefficients sgd_coefficients(double lr, double momentum, double dampening, double weight_decay, bool nesterov,
                                 bool first_step) {
  SgdCoefficients c;
  c.neg_lr = static_cast<float>(-lr);
  c.momentum = static_cast<float>(momentum);
  c.one_minus_dampening = static_cast<float>(1 - dampening);
  c.weight_decay = static_cast<float>(weight_decay);
  c.nesterov = nesterov;
  c.first_step = first_step;
  return c;
}

namespace {

// One block; `delta` gets after - before. The branches are on the coefficients, the same for
// every element: the loops stay simple for the compiler.
void sgd_block(float* __restrict p, const float* __restrict g, float* __restrict b, int64_t n,
               const SgdCoefficients& c, float* __restrict delta) {
  for (int64_t i = 0; i < n; ++i) {
    const float before = p[i];
    float d = c.weight_decay != 0 ? g[i] + c.weight_decay * before : g[i];
    if (c.momentum != 0) {
      const float buf = c.first_step ? d : b[i] * c.momentum + c.one_minus_dampening * d;
      b[i] = buf;
      d = c.nesterov ? d + c.momentum * buf : buf;
    }
    const float after = before + c.neg_lr * d;
    p[i] = after;
    delta[i] = after - before;
  }
}

}  // namespace

void sgd_pass(float* p, const float* g, float* b, int64_t n, const SgdCoefficients& c, const StatsOptions& options,
              FusedStats* stats) {
  internal::measured_blocks(p, g, n, options, stats, "sgd", [&](int64_t k, int64_t len, float* delta) {
    sgd_block(p + k, g + k, b ? b + k : nullptr, len, c, delta);
  });
}

}  // namespace gradscope
