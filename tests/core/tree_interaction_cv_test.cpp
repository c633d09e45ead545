// A pair is suggested only when its interaction term lowers the cross-validated
// held-out loss of an additive model: planted interactions y = f(x_i * x_j)
// pass with a gain and a small p; pure (nonlinear) main effects and correlated
// pairs without an interaction do not. The truth is the formula the labels were
// drawn from.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "gradscope/core/trees/interactions.h"

namespace gradscope {
namespace {

// Six features uniform in [-1, 1]; x4 is x3 plus noise (r about 0.92). Labels
// from `signal`: Bernoulli(sigmoid(signal)) when `binary`, else signal plus
// unit normal noise.
template <class F>
TreeData planted(uint64_t seed, std::size_t rows, bool binary, F signal) {
  std::mt19937_64 gen(seed);
  auto uniform = [&] { return static_cast<double>(gen() >> 11) * 0x1p-53; };
  auto normal = [&] { // Box-Muller from raw bits: the same draws on every
                      // standard library
    const double u = uniform() + 0x1p-54, v = uniform();
    return std::sqrt(-2 * std::log(u)) * std::cos(2 * M_PI * v);
  };
  TreeData d;
  d.rows = rows;
  d.cols = 6;
  for (std::size_t i = 0; i < rows; ++i) {
    double x[6];
    for (double &v : x)
      v = 2 * uniform() - 1;
    x[4] = x[3] + 0.25 * normal();
    d.x.insert(d.x.end(), x, x + 6);
    const double s = signal(x);
    d.y.push_back(binary ? (uniform() < 1 / (1 + std::exp(-s)) ? 1.0 : 0.0)
                         : s + normal());
  }
  return d;
}

InteractionReport
candidates(std::initializer_list<std::pair<int32_t, int32_t>> pairs) {
  InteractionReport r;
  for (const auto &[a, b] : pairs) {
    InteractionPair p;
    p.a = a;
    p.b = b;
    r.kept.push_back(p);
  }
  return r;
}

const InteractionPair *find(const std::vector<InteractionPair> &v, int32_t a,
                            int32_t b) {
  for (const InteractionPair &p : v)
    if (p.a == a && p.b == b)
      return &p;
  return nullptr;
}

// The pairs every test asks about: (0,1) interacts; (2,5) a nonlinear main
// effect and noise; (3,4) correlated, x3 with a nonlinear main effect, no
// interaction; (2,3) two main effects.
InteractionReport tested(const TreeData &d, InteractionModel m) {
  InteractionReport r = candidates({{0, 1}, {2, 5}, {3, 4}, {2, 3}});
  test_interactions(r, d, m);
  return r;
}

TEST(TreeInteractionTest, APlantedInteractionIsSuggestedAndMainEffectsAreNot) {
  auto signal = [](const double *x) {
    return 4 * x[0] * x[1] + 2 * x[2] * x[2] + 2 * x[3] * x[3];
  };
  for (const bool binary : {true, false}) {
    const TreeData d = planted(1, 2000, binary, signal);
    const InteractionReport r =
        tested(d, binary ? InteractionModel::kLogistic
                         : InteractionModel::kLeastSquares);
    EXPECT_TRUE(r.tested);
    EXPECT_EQ(r.test_rows, 2000);
    for (const auto *list : {&r.kept, &r.no_evidence})
      for (const InteractionPair &p : *list)
        std::printf("%s: x%d x x%d: held-out gain %.4g, p %.4g%s\n",
                    binary ? "logistic" : "least squares", p.a, p.b, p.cv_gain,
                    p.p_value,
                    list == &r.kept ? " (suggested)" : " (no evidence)");
    ASSERT_EQ(r.kept.size(), 1u) << (binary ? "logistic" : "least squares");
    EXPECT_EQ(r.kept[0].a, 0);
    EXPECT_EQ(r.kept[0].b, 1);
    EXPECT_GT(r.kept[0].cv_gain, 0.01);
    EXPECT_LT(r.kept[0].p_value, 1e-6);
    for (const auto &[a, b] : {std::pair{2, 5}, {3, 4}, {2, 3}}) {
      const InteractionPair *p = find(r.no_evidence, a, b);
      ASSERT_NE(p, nullptr) << a << "," << b;
      EXPECT_GE(p->p_value, kInteractionAlpha);
    }
  }
}

TEST(TreeInteractionTest,
     PairsWithoutAnInteractionAreSuggestedAtMost5PercentOfTheTime) {
  // Forty draws of labels with main effects only (two of them nonlinear, one on
  // a feature correlated with another): each of the four pairs tested in each
  // draw is a null.
  auto signal = [](const double *x) {
    return 1.5 * x[0] + 2 * x[2] * x[2] + 2 * x[3] * x[3];
  };
  int tests = 0, suggested = 0;
  for (uint64_t seed = 10; seed < 50; ++seed) {
    const InteractionReport r =
        tested(planted(seed, 600, seed % 2 == 0, signal),
               seed % 2 == 0 ? InteractionModel::kLogistic
                             : InteractionModel::kLeastSquares);
    tests += 4;
    suggested += static_cast<int>(r.kept.size());
  }
  std::printf("main effects only: %d of %d pairs suggested\n", suggested,
              tests);
  EXPECT_LE(suggested, tests / 20);
}

TEST(TreeInteractionTest, TheGainGrowsWithThePlantedInteractionsStrength) {
  double last = -1;
  for (const double c : {0.5, 1.0, 2.0, 4.0}) {
    auto signal = [c](const double *x) {
      return c * x[0] * x[1] + 2 * x[2] * x[2];
    };
    const InteractionReport r =
        tested(planted(3, 2000, true, signal), InteractionModel::kLogistic);
    const InteractionPair *p = find(r.kept, 0, 1);
    if (!p)
      p = find(r.no_evidence, 0, 1);
    ASSERT_NE(p, nullptr);
    std::printf(
        "logistic, 2000 rows, interaction %.1f x0 x1: gain %.4g, p %.4g\n", c,
        p->cv_gain, p->p_value);
    EXPECT_GT(p->cv_gain, last) << c;
    last = p->cv_gain;
  }
}

TEST(TreeInteractionTest, WithoutLabelsNothingIsTested) {
  TreeData d = planted(2, 100, true, [](const double *) { return 0.0; });
  d.y.clear();
  InteractionReport r = candidates({{0, 1}});
  test_interactions(r, d, InteractionModel::kLogistic);
  EXPECT_FALSE(r.tested);
  ASSERT_EQ(r.kept.size(), 1u);
  EXPECT_TRUE(std::isnan(r.kept[0].cv_gain));
}

} // namespace
} // namespace gradscope
