// Gini, entropy, effective rank, Pearson and the paired t-test against closed forms and R.
#include "gradscope/core/embedding/math.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

double harmonic(int n) {
  double h = 0;
  for (int k = 1; k <= n; ++k) h += 1.0 / k;
  return h;
}

TEST(EmbeddingMath, GiniOfZipfMatchesClosedForm) {
  // x_k = 1/k: sum_i i x_(i) over ascending order = (n + 1) H_n - n, so G = (n + 1)/n - 2/H_n.
  for (int n : {2, 8, 100}) {
    std::vector<double> x;
    for (int k = 1; k <= n; ++k) x.push_back(1.0 / k);
    EXPECT_NEAR(gini(x), (n + 1.0) / n - 2.0 / harmonic(n), 1e-12) << n;
  }
}

TEST(EmbeddingMath, GiniExtremes) {
  EXPECT_DOUBLE_EQ(gini({3, 3, 3, 3}), 0.0);
  EXPECT_NEAR(gini({0, 0, 1}), 2.0 / 3.0, 1e-15);
  EXPECT_TRUE(std::isnan(gini({})));
  EXPECT_TRUE(std::isnan(gini({0, 0})));
  EXPECT_THROW(gini({1, -1}), Error);
}

TEST(EmbeddingMath, EntropyOfZipfMatchesClosedForm) {
  const int n = 8;
  std::vector<double> x;
  double s = 0;
  for (int k = 1; k <= n; ++k) x.push_back(1.0 / k), s += std::log(k) / k;
  const double h = harmonic(n);
  // p_k = 1/(k H_n): H = log H_n + (sum log k / k) / H_n.
  EXPECT_NEAR(normalized_entropy(x), (std::log(h) + s / h) / std::log(n), 1e-12);
  EXPECT_NEAR(normalized_entropy({2, 2, 2}), 1.0, 1e-15);
  EXPECT_NEAR(normalized_entropy({5, 0}), 0.0, 1e-15);
}

TEST(EmbeddingMath, EffectiveRank) {
  EXPECT_NEAR(effective_rank({2, 2, 2, 2}), 4.0, 1e-12);
  EXPECT_NEAR(effective_rank({5, 0, 0}), 1.0, 1e-12);
  EXPECT_NEAR(effective_rank({3, 1}), std::exp(-(0.75 * std::log(0.75) + 0.25 * std::log(0.25))), 1e-12);
  EXPECT_EQ(effective_rank({}), 0.0);
}

TEST(EmbeddingMath, Pearson) {
  EXPECT_NEAR(pearson({1, 2, 3, 4}, {3, 5, 7, 9}), 1.0, 1e-15);
  EXPECT_NEAR(pearson({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0, 1e-15);
  EXPECT_NEAR(pearson({1, 2, 3}, {1, 3, 2}), 0.5, 1e-15);
  EXPECT_TRUE(std::isnan(pearson({1, 1, 1}, {1, 2, 3})));
}

TEST(EmbeddingMath, PairedTTestMatchesR) {
  // R: t.test(1:5) -> t = 4.2426, df = 4, p-value = 0.01324
  const TTest t = paired_t_test({1, 2, 3, 4, 5}, {0, 0, 0, 0, 0});
  EXPECT_NEAR(t.mean_diff, 3.0, 1e-15);
  EXPECT_NEAR(t.t, 3.0 / std::sqrt(0.5), 1e-12);
  EXPECT_EQ(t.df, 4.0);
  EXPECT_NEAR(t.p, 0.01324, 5e-6);
  // R: qt(0.975, 10) = 2.228139
  EXPECT_NEAR(student_t_cdf(2.228139, 10), 0.975, 1e-6);
  EXPECT_NEAR(student_t_cdf(-2.228139, 10), 0.025, 1e-6);
  EXPECT_NEAR(student_t_cdf(0.0, 3), 0.5, 1e-15);
  EXPECT_EQ(paired_t_test({1, 2}, {1, 2}).p, 1.0);
  EXPECT_THROW(paired_t_test({1}, {1}), Error);
  EXPECT_THROW(paired_t_test({1, 2}, {1}), Error);
}

}  // namespace
}  // namespace gradscope
