// The paired t-test every validation program reports (gradscope::paired_t_test, in
// src/core/embedding/math.cpp: t = mean(d) / (sd(d) / sqrt(n)), df = n - 1, two-sided p from
// Student's t CDF through the regularised incomplete beta function, Numerical Recipes in C 2nd
// ed. 6.4, betai/betacf), checked here against published values, since docs/validation.md's
// p-values are only as good as it is.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "gradscope/core/embedding/math.h"

namespace gradscope {
namespace {

// Quantiles of Student's t (any t table, e.g. Abramowitz & Stegun table 26.10; R's qt() to 7
// digits): P(T <= t) = q.
struct Quantile {
  double df, q, t;
};
const Quantile kTable[] = {
    {1, 0.975, 12.7062047}, {2, 0.975, 4.3026527}, {3, 0.975, 3.1824463},
    {4, 0.975, 2.7764451},  {5, 0.975, 2.5705818}, {10, 0.975, 2.2281389},
    {30, 0.975, 2.0422725}, {100, 0.975, 1.9839715}, {4, 0.95, 2.1318468},
    {4, 0.995, 4.6040949},  {10, 0.999, 4.1437794}, {5, 0.9995, 6.8688266},
};

TEST(StudentT, CdfMatchesTheTable) {
  for (const Quantile& x : kTable) {
    EXPECT_NEAR(student_t_cdf(x.t, x.df), x.q, 2e-7) << "df " << x.df << ", t " << x.t;
    EXPECT_NEAR(student_t_cdf(-x.t, x.df), 1 - x.q, 2e-7) << "df " << x.df << ", t " << -x.t;
  }
}

// Closed forms: df 1 is Cauchy, 1/2 + atan(t) / pi; df 2 is 1/2 + t / (2 sqrt(2 + t^2)).
TEST(StudentT, CdfMatchesClosedFormsForOneAndTwoDegrees) {
  const double pi = std::acos(-1.0);
  for (double t : {-30.0, -3.0, -1.0, -0.25, 0.0, 0.5, 1.0, 2.5, 7.0, 100.0}) {
    EXPECT_NEAR(student_t_cdf(t, 1), 0.5 + std::atan(t) / pi, 1e-12) << t;
    EXPECT_NEAR(student_t_cdf(t, 2), 0.5 + t / (2 * std::sqrt(2 + t * t)), 1e-12) << t;
  }
}

// Many degrees of freedom: the standard normal (the per-user tests have df 667).
TEST(StudentT, ApproachesTheNormal) {
  EXPECT_NEAR(student_t_cdf(1.959964, 1e7), 0.975, 1e-6);
  EXPECT_NEAR(student_t_cdf(-2.5, 1e7), normal_cdf(-2.5), 1e-7);
}

// Student (1908), the "sleep" data (R's datasets::sleep): extra hours of sleep under two drugs
// for the same 10 patients. R: t.test(extra ~ group, data = sleep, paired = TRUE) gives t =
// -4.0621, df = 9, p-value = 0.002833, mean difference -1.58.
TEST(PairedTTest, MatchesStudentsSleepData) {
  const std::vector<double> drug1 = {0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0};
  const std::vector<double> drug2 = {1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4};
  const TTest t = paired_t_test(drug1, drug2);
  EXPECT_NEAR(t.mean_diff, -1.58, 1e-12);
  EXPECT_EQ(t.df, 9);
  EXPECT_NEAR(t.t, -4.0621, 5e-5);
  EXPECT_NEAR(t.p, 0.002833, 5e-7);
  // The test is symmetric: swapping the arms flips t and keeps p.
  const TTest s = paired_t_test(drug2, drug1);
  EXPECT_NEAR(s.t, 4.0621, 5e-5);
  EXPECT_DOUBLE_EQ(s.p, t.p);
}

}  // namespace
}  // namespace gradscope
