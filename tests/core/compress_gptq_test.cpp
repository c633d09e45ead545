// gptq_round: on uncorrelated inputs it is round-to-nearest; on correlated ones its output error
// on the calibration batch (computed here by the matrix product) is below round-to-nearest's;
// its values lie on each unit's grid; columns no input reaches are rounded to nearest.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "../common/error_of.h"
#include "gradscope/core/compress/gptq.h"
#include "gradscope/core/compress/packed.h"

namespace gradscope::compress {
namespace {

using ::testing::HasSubstr;
using test::error_of;

struct Layer {
  int64_t units, cols, n;
  std::vector<float> w;
  std::vector<double> x;  // [n, cols]
  std::vector<double> gram() const {
    std::vector<double> g(static_cast<std::size_t>(cols * cols), 0.0);
    for (int64_t r = 0; r < n; ++r)
      for (int64_t i = 0; i < cols; ++i)
        for (int64_t k = 0; k < cols; ++k) g[i * cols + k] += x[r * cols + i] * x[r * cols + k];
    return g;
  }
  // sum over the batch and units of (x . (w_j - v_j))^2: how far the node's output moved.
  double output_error(const std::vector<float>& v) const {
    double e = 0;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t j = 0; j < units; ++j) {
        double d = 0;
        for (int64_t i = 0; i < cols; ++i) d += x[r * cols + i] * (static_cast<double>(w[j * cols + i]) - v[j * cols + i]);
        e += d * d;
      }
    return e;
  }
};

// Inputs x = z A with A mixing the columns (correlation 0.9 between neighbours when `mix`).
Layer layer(int64_t units, int64_t cols, bool mix, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0.0, 1.0);
  Layer l{units, cols, 256, {}, {}};
  for (int64_t i = 0; i < units * cols; ++i) l.w.push_back(static_cast<float>(z(rng) * 0.3));
  for (int64_t r = 0; r < l.n; ++r) {
    double prev = z(rng);
    for (int64_t i = 0; i < cols; ++i) {
      const double fresh = z(rng);
      prev = mix ? 0.9 * prev + std::sqrt(1 - 0.81) * fresh : fresh;
      l.x.push_back(prev);
    }
  }
  return l;
}

std::vector<float> nearest(const Layer& l, int qmax) {
  std::vector<float> v(l.w.size());
  std::vector<int32_t> q(static_cast<std::size_t>(l.cols));
  for (int64_t j = 0; j < l.units; ++j) {
    const float s = quantise_unit(l.w.data() + j * l.cols, l.cols, qmax, q.data());
    for (int64_t i = 0; i < l.cols; ++i) v[j * l.cols + i] = static_cast<float>(q[i]) * s;
  }
  return v;
}

TEST(CompressGptq, DiagonalGramIsRoundToNearest) {
  const Layer l = layer(6, 10, false, 1);
  std::vector<double> g(100, 0.0);
  for (int i = 0; i < 10; ++i) g[i * 10 + i] = 1.0 + i;  // uncorrelated inputs, unequal energy
  std::vector<float> v = l.w;
  const std::vector<float> scales = gptq_round(v.data(), 6, 10, g.data(), 7);
  EXPECT_EQ(v, nearest(l, 7));
  ASSERT_EQ(scales.size(), 6u);
}

TEST(CompressGptq, CorrelatedInputsMoveTheOutputLessThanNearest) {
  for (int qmax : {7, 3, 1}) {
    SCOPED_TRACE(qmax);
    const Layer l = layer(8, 24, true, 2 + qmax);
    std::vector<float> v = l.w;
    const std::vector<double> g = l.gram();
    const std::vector<float> scales = gptq_round(v.data(), l.units, l.cols, g.data(), qmax);
    const double rtn = l.output_error(nearest(l, qmax)), gptq = l.output_error(v);
    EXPECT_LT(gptq, 0.8 * rtn) << "gptq " << gptq << " nearest " << rtn;
    // On each unit's grid: value = q x scale, q an integer within +-qmax, the scale round-to-nearest's.
    std::vector<int32_t> q(24);
    for (int64_t j = 0; j < l.units; ++j) {
      EXPECT_EQ(scales[j], quantise_unit(l.w.data() + j * 24, 24, qmax, q.data()));
      for (int64_t i = 0; i < 24; ++i) {
        const float k = std::nearbyint(v[j * 24 + i] / scales[j]);
        EXPECT_EQ(v[j * 24 + i], k * scales[j]);
        EXPECT_LE(std::fabs(k), qmax);
      }
    }
  }
}

TEST(CompressGptq, AColumnNoInputReachesIsRoundedToNearest) {
  Layer l = layer(4, 6, true, 9);
  for (int64_t r = 0; r < l.n; ++r) l.x[r * 6 + 2] = 0.0;  // input 2 is always zero
  std::vector<float> v = l.w;
  const std::vector<double> g = l.gram();
  gptq_round(v.data(), 4, 6, g.data(), 3);
  const std::vector<float> rtn = nearest(l, 3);
  for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(v[j * 6 + 2], rtn[j * 6 + 2]);
  EXPECT_LE(l.output_error(v), l.output_error(rtn));
}

TEST(CompressGptq, BadInputIsAnError) {
  std::vector<float> w(4, 1.0f);
  std::vector<double> g = {1, 0, 0, 1};
  EXPECT_THAT(error_of([&] { gptq_round(w.data(), 2, 2, g.data(), 0); }), HasSubstr("qmax must be >= 1"));
  EXPECT_THAT(error_of([&] { gptq_round(w.data(), 0, 2, g.data(), 7); }), HasSubstr("needs units and columns"));
  g[1] = std::nan("");
  EXPECT_THAT(error_of([&] { gptq_round(w.data(), 2, 2, g.data(), 7); }), HasSubstr("Gram matrix holds NaN"));
  g = {1, 2, 2, 1};  // indefinite
  EXPECT_THAT(error_of([&] { gptq_round(w.data(), 2, 2, g.data(), 7); }), HasSubstr("not positive definite"));
  w[0] = INFINITY;
  EXPECT_THAT(error_of([&] { gptq_round(w.data(), 2, 2, g.data(), 7); }), HasSubstr("weight holds NaN or Inf"));
}

}  // namespace
}  // namespace gradscope::compress
