#include "gradscope/core/embedding/math.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Continued fraction of the regularised incomplete beta function, modified Lentz's method
// (Numerical Recipes in C, 2nd ed., section 6.4, betacf).
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300, kEps = 1e-15;
  const double qab = a + b, qap = a + 1.0, qam = a - 1.0;
  double c = 1.0, d = 1.0 - qab * x / qap;
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1.0 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1.0 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1.0 / d;
    const double del = d * c;
    h *= del;
    if (std::fabs(del - 1.0) < kEps) break;
  }
  return h;
}

// I_x(a, b), Numerical Recipes 6.4 (betai).
double incomplete_beta(double a, double b, double x) {
  if (x <= 0.0) return 0.0;
  if (x >= 1.0) return 1.0;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) +
                                a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1.0) / (a + b + 2.0)) return front * beta_continued_fraction(a, b, x) / a;
  return 1.0 - front * beta_continued_fraction(b, a, 1.0 - x) / b;
}
}  // namespace

double gini(std::vector<double> values) {
  for (double v : values)
    if (!(v >= 0.0) || !std::isfinite(v)) throw Error("gini: values must be finite and >= 0");
  if (values.empty()) return kNaN;
  std::sort(values.begin(), values.end());
  // G = 2 sum_i i x_(i) / (n sum x) - (n + 1) / n, x ascending, i = 1..n (Damgaard & Weiner
  // 2000, eq. 3; the sample Gini without small-sample correction, as GradTracer computes it).
  double sum = 0.0, weighted = 0.0;
  const double n = static_cast<double>(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    sum += values[i];
    weighted += static_cast<double>(i + 1) * values[i];
  }
  if (sum == 0.0) return kNaN;
  return 2.0 * weighted / (n * sum) - (n + 1.0) / n;
}

double normalized_entropy(const std::vector<double>& values) {
  if (values.size() < 2) return kNaN;
  const double sum = std::accumulate(values.begin(), values.end(), 0.0);
  if (!(sum > 0.0)) return kNaN;
  double h = 0.0;  // Shannon (1948): H = -sum p log p
  for (double v : values)
    if (v > 0.0) h -= (v / sum) * std::log(v / sum);
  return h / std::log(static_cast<double>(values.size()));
}

double effective_rank(const std::vector<double>& singular_values) {
  double sum = 0.0;
  for (double s : singular_values) sum += std::fabs(s);
  if (!(sum > 0.0)) return 0.0;
  double h = 0.0;  // Roy & Vetterli (2007), eq. 2-3: erank = exp(-sum p_k log p_k)
  for (double s : singular_values) {
    const double p = std::fabs(s) / sum;
    if (p > 0.0) h -= p * std::log(p);
  }
  return std::exp(h);
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 2) return kNaN;
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0, syy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
  }
  if (sxx == 0.0 || syy == 0.0) return kNaN;
  return sxy / std::sqrt(sxx * syy);
}

double student_t_cdf(double t, double df) {
  if (std::isnan(t) || !(df > 0)) return kNaN;
  if (std::isinf(t)) return t > 0 ? 1.0 : 0.0;
  // P(|T| > |t|) = I_{df / (df + t^2)}(df / 2, 1 / 2) (Abramowitz & Stegun 26.7.1, 26.5.27).
  const double tail = 0.5 * incomplete_beta(0.5 * df, 0.5, df / (df + t * t));
  return t >= 0 ? 1.0 - tail : tail;
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

double binomial_mean_absolute_deviation(int64_t n, double p) {
  if (n < 0 || !(p >= 0.0 && p <= 1.0)) throw Error("binomial deviation: need n >= 0 and p in [0, 1]");
  if (n == 0 || p == 0.0 || p == 1.0) return 0.0;
  const double nd = static_cast<double>(n);
  const double k = std::floor(nd * p) + 1.0;
  if (k > nd) return 0.0;
  // In logs: C(n, k) overflows a double long before n reaches a training run's lookups.
  const double log_term = std::log(2.0 * k) + std::lgamma(nd + 1.0) - std::lgamma(k + 1.0) - std::lgamma(nd - k + 1.0) +
                          k * std::log(p) + (nd - k + 1.0) * std::log1p(-p);
  return std::exp(log_term);
}

TTest paired_t_test(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) throw Error("paired t-test: samples differ in size");
  if (a.size() < 2) throw Error("paired t-test: needs at least 2 pairs");
  const double n = static_cast<double>(a.size());
  double mean = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) mean += a[i] - b[i];
  mean /= n;
  double ss = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) ss += (a[i] - b[i] - mean) * (a[i] - b[i] - mean);
  TTest r;
  r.mean_diff = mean;
  r.df = n - 1.0;
  const double se = std::sqrt(ss / (n - 1.0) / n);
  if (se == 0.0) {
    r.t = mean == 0.0 ? 0.0 : std::copysign(std::numeric_limits<double>::infinity(), mean);
    r.p = mean == 0.0 ? 1.0 : 0.0;
    return r;
  }
  r.t = mean / se;
  r.p = 2.0 * (1.0 - student_t_cdf(std::fabs(r.t), r.df));
  return r;
}

}  // namespace gradscope
