// The fused Adam and SGD passes: their updates are the formulas', element by element, and their
// statistics are what compute() says of the same elements, across block edges and with
// non-finite values.
#include "gradscope/core/optim/adam_pass.h"
#include "gradscope/core/optim/sgd_pass.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "test_data.h"

namespace gradscope {
namespace {

using test::expect_same;  // counts, min and max exact, sums within 1e-12

Stats of(const std::vector<float>& x) {
  return compute(TensorView::contiguous(x.data(), DType::kFloat32, {static_cast<int64_t>(x.size())}));
}

TEST(AdamPass, UpdatesAsTheFormulaAndMeasuresAsCompute) {
  std::mt19937 rng(1);
  std::normal_distribution<float> z;
  for (const int64_t n : {int64_t{1}, kAdamBlock - 1, kAdamBlock, kAdamBlock + 1, int64_t{10000}}) {
    for (const bool decoupled : {false, true}) {
      SCOPED_TRACE(std::to_string(n) + (decoupled ? " decoupled" : " L2"));
      std::vector<float> p(n), g(n), m(n), v(n);
      for (int64_t i = 0; i < n; ++i) {
        p[i] = z(rng);
        g[i] = i % 97 == 0 ? 0.f : 0.1f * z(rng);  // some zero gradients
        m[i] = 0.01f * z(rng);
        v[i] = 1e-4f * std::fabs(z(rng));
      }
      if (n > 5) g[5] = std::numeric_limits<float>::quiet_NaN();
      const std::vector<float> p0 = p, g0 = g, m0 = m, v0 = v;
      const AdamCoefficients c = adam_coefficients(1e-2, 0.9, 0.999, 1e-8, 0.1, 7, decoupled);
      FusedStats s;
      adam_pass(p.data(), g.data(), m.data(), v.data(), n, c, StatsOptions{}, &s);
      // The formula in float, written out here (LibTorch's Adam, docs/optimizers.md).
      std::vector<float> delta(n);
      for (int64_t i = 0; i < n; ++i) {
        const float wd = 0.1f, base = decoupled ? p0[i] * static_cast<float>(1 - 1e-2 * 0.1) : p0[i];
        const float grad = decoupled ? g0[i] : g0[i] + wd * base;
        const float mi = m0[i] * 0.9f + static_cast<float>(1 - 0.9) * grad;
        const float vi = v0[i] * 0.999f + static_cast<float>(1 - 0.999) * grad * grad;
        const float denom = std::sqrt(vi) / static_cast<float>(std::sqrt(1 - std::pow(0.999, 7))) + 1e-8f;
        const float after = base + static_cast<float>(-1e-2 / (1 - std::pow(0.9, 7))) * (mi / denom);
        if (std::isnan(after)) {
          EXPECT_TRUE(std::isnan(p[i])) << i;
        } else {
          EXPECT_EQ(p[i], after) << i;
          EXPECT_EQ(m[i], mi) << i;
          EXPECT_EQ(v[i], vi) << i;
        }
        delta[i] = after - p0[i];
      }
      expect_same(s.value, of(p0));
      expect_same(s.grad, of(g0));
      expect_same(s.update, of(delta));
      if (n > 5) {
        EXPECT_EQ(s.grad.nan, 1);
      }
    }
  }
}

// The AVX2 build of the block loop and the portable one give the same bits (the same float
// operations in the same order, sqrt and division exact in every lane, no FMA).
TEST(AdamPass, EveryKernelGivesTheSameBits) {
  std::mt19937 rng(2);
  std::normal_distribution<float> z;
  const int64_t n = 3 * kAdamBlock + 5;
  std::vector<float> p(n), g(n), m(n), v(n);
  for (int64_t i = 0; i < n; ++i) p[i] = z(rng), g[i] = z(rng), m[i] = 0.1f * z(rng), v[i] = std::fabs(z(rng));
  std::vector<float> p2 = p, m2 = m, v2 = v;
  const AdamCoefficients c = adam_coefficients(3e-3, 0.9, 0.99, 1e-6, 1e-2, 3);
  StatsOptions scalar, fastest;
  scalar.kernel = Kernel::kScalar;
  FusedStats a, b;
  adam_pass(p.data(), g.data(), m.data(), v.data(), n, c, scalar, &a);
  adam_pass(p2.data(), g.data(), m2.data(), v2.data(), n, c, fastest, &b);
  EXPECT_EQ(p, p2);
  EXPECT_EQ(m, m2);
  EXPECT_EQ(v, v2);
  expect_same(a.update, b.update);
}

TEST(AdamPass, WithoutStatsOnlyUpdates) {
  std::vector<float> p = {1, -2}, g = {0.5f, 0.5f}, m = {0, 0}, v = {0, 0};
  adam_pass(p.data(), g.data(), m.data(), v.data(), 2, adam_coefficients(0.1, 0.9, 0.999, 1e-8, 0, 1), {}, nullptr);
  // First step: m = 0.05, v = 0.00025, denom = sqrt(v) / sqrt(0.001) = 0.5, step = 0.1 / 0.1 = 1.
  EXPECT_NEAR(p[0], 1 - 0.1f, 1e-6);
  EXPECT_NEAR(p[1], -2 - 0.1f, 1e-6);
  EXPECT_FLOAT_EQ(m[0], 0.05f);
}

// SGD: plain, momentum with dampening (first step and later), Nesterov with weight decay.
TEST(SgdPass, UpdatesAsTheFormulaAndMeasuresAsCompute) {
  std::mt19937 rng(3);
  std::normal_distribution<float> z;
  const int64_t n = kAdamBlock + 7;
  struct Case {
    double momentum, dampening, weight_decay;
    bool nesterov, first;
  };
  for (const Case k : {Case{0, 0, 0, false, true}, Case{0.9, 0.1, 0, false, true}, Case{0.9, 0.1, 0, false, false},
                       Case{0.9, 0, 1e-2, true, false}}) {
    SCOPED_TRACE(std::to_string(k.momentum) + " " + std::to_string(k.nesterov) + " " + std::to_string(k.first));
    std::vector<float> p(n), g(n), b(n);
    for (int64_t i = 0; i < n; ++i) p[i] = z(rng), g[i] = z(rng), b[i] = z(rng);
    g[3] = std::numeric_limits<float>::infinity();
    const std::vector<float> p0 = p, b0 = b;
    FusedStats s;
    sgd_pass(p.data(), g.data(), k.momentum != 0 ? b.data() : nullptr, n,
             sgd_coefficients(0.05, k.momentum, k.dampening, k.weight_decay, k.nesterov, k.first), {}, &s);
    std::vector<float> delta(n);
    for (int64_t i = 0; i < n; ++i) {
      float d = k.weight_decay != 0 ? g[i] + static_cast<float>(k.weight_decay) * p0[i] : g[i];
      if (k.momentum != 0) {
        const float m = static_cast<float>(k.momentum);
        const float buf = k.first ? d : b0[i] * m + static_cast<float>(1 - k.dampening) * d;
        EXPECT_EQ(b[i], buf) << i;
        d = k.nesterov ? d + m * buf : buf;
      }
      const float after = p0[i] + static_cast<float>(-0.05) * d;
      EXPECT_EQ(p[i], after) << i;
      delta[i] = after - p0[i];
    }
    expect_same(s.value, of(p0));
    expect_same(s.grad, of(g));
    expect_same(s.update, of(delta));
    EXPECT_EQ(s.grad.pos_inf, 1);
  }
}

}  // namespace
}  // namespace gradscope
