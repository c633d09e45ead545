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

// One block; `delta` gets after - before. The choices are template arguments, not branches in
// the loop, so that each loop is straight-line code the compiler vectorises (with them in the
// loop, the fused SGD was 1.03x LibTorch's three vectorised operations).
enum class Momentum { kNone, kFirst, kBuffer };

template <bool kDecay, Momentum kMomentum, bool kNesterov>
void sgd_loop(float* __restrict p, const float* __restrict g, float* __restrict b, int64_t n,
              const SgdCoefficients& c, float* __restrict delta) {
  const float wd = c.weight_decay, m = c.momentum, damp = c.one_minus_dampening, lr = c.neg_lr;
  for (int64_t i = 0; i < n; ++i) {
    const float before = p[i];
    float d = kDecay ? g[i] + wd * before : g[i];
    if (kMomentum != Momentum::kNone) {
      const float buf = kMomentum == Momentum::kFirst ? d : b[i] * m + damp * d;
      b[i] = buf;
      d = kNesterov ? d + m * buf : buf;
    }
    const float after = before + lr * d;
    p[i] = after;
    delta[i] = after - before;
  }
}

template <bool kDecay, Momentum kMomentum>
void sgd_nesterov(float* p, const float* g, float* b, int64_t n, const SgdCoefficients& c, float* delta) {
  if (c.nesterov)
    sgd_loop<kDecay, kMomentum, true>(p, g, b, n, c, delta);
  else
    sgd_loop<kDecay, kMomentum, false>(p, g, b, n, c, delta);
}

template <bool kDecay>
void sgd_momentum(float* p, const float* g, float* b, int64_t n, const SgdCoefficients& c, float* delta) {
  if (c.momentum == 0)
    sgd_loop<kDecay, Momentum::kNone, false>(p, g, b, n, c, delta);
  else if (c.first_step)
    sgd_nesterov<kDecay, Momentum::kFirst>(p, g, b, n, c, delta);
  else
    sgd_nesterov<kDecay, Momentum::kBuffer>(p, g, b, n, c, delta);
}

void sgd_block(float* p, const float* g, float* b, int64_t n, const SgdCoefficients& c, float* delta) {
  if (c.weight_decay != 0)
    sgd_momentum<true>(p, g, b, n, c, delta);
  else
    sgd_momentum<false>(p, g, b, n, c, delta);
}

}  // namespace

void sgd_pass(float* p, const float* g, float* b, int64_t n, const SgdCoefficients& c, const StatsOptions& options,
              FusedStats* stats) {
  internal::measured_blocks(p, g, n, options, stats, "sgd", [&](int64_t k, int64_t len, float* delta) {
    sgd_block(p + k, g + k, b ? b + k : nullptr, len, c, delta);
  });
}

}  // namespace gradscope
