// Embedding math: distribution and spectrum summaries and the paired t-test, standard library
// only, so rules and validation programs share one implementation.
//
//   std::vector<double> exposure = {840, 420, 280, 210};
//   double g = gradscope::gini(exposure);              // 0 = equal, -> 1 = concentrated
//   double h = gradscope::normalized_entropy(exposure);  // 1 = uniform
//   double r = gradscope::effective_rank({3.0, 1.0, 0.5});
//   gradscope::TTest t = gradscope::paired_t_test(a, b);  // t, df, two-sided p
#pragma once

#include <cstdint>
#include <vector>

namespace gradscope {

/// Gini coefficient of non-negative values (0 all equal; (n-1)/n one holds everything).
/// NaN for no values or an all-zero input. Throws Error for a negative or non-finite value.
double gini(std::vector<double> values);

/// Shannon entropy of values / sum, divided by log(n): 1 for a uniform distribution. Zero
/// values count in n. NaN for fewer than two values or an all-zero input.
double normalized_entropy(const std::vector<double>& values);

/// Effective rank of a matrix from its singular values: exp of the entropy of s_i / sum s
/// (Roy & Vetterli 2007). 0 for no (or all-zero) singular values.
double effective_rank(const std::vector<double>& singular_values);

/// Pearson correlation of two equally long series; NaN when shorter than 2 or constant.
double pearson(const std::vector<double>& x, const std::vector<double>& y);

/// Result of a paired t-test of mean(a - b) against 0.
struct TTest {
  double mean_diff = 0;  ///< mean of a_i - b_i
  double t = 0;          ///< mean_diff / (sd / sqrt(n))
  double df = 0;         ///< n - 1
  double p = 1;          ///< two-sided p-value from Student's t distribution
};

/// Paired t-test over pairs (a_i, b_i). Throws Error for unequal sizes or fewer than 2 pairs.
/// A zero spread gives t = +-Inf and p = 0 (or t = 0, p = 1 when every difference is 0).
TTest paired_t_test(const std::vector<double>& a, const std::vector<double>& b);

/// P(T <= t) for Student's t with `df` degrees of freedom.
double student_t_cdf(double t, double df);

/// P(Z <= z) for a standard normal Z.
double normal_cdf(double z);

/// E|X - n p| for X ~ Binomial(n, p): 2 k C(n, k) p^k (1 - p)^(n - k + 1) with k = floor(n p)
/// + 1 (de Moivre; Diaconis & Zabell 1991, "Closed form summation for classical
/// distributions"). 0 for p = 0 or 1. Throws Error for n < 0 or p outside [0, 1].
double binomial_mean_absolute_deviation(int64_t n, double p);

}  // namespace gradscope
