#include "gradscope/core/embedding/zombie_null.h"

#include <algorithm>
#include <cmath>

#include "gradscope/core/embedding/math.h"

namespace gradscope {
namespace {

constexpr double kMadToSd = 1.4826;  // sd of a normal / its median absolute deviation
constexpr double kMaxCorrelation = 0.99;

double median_of(std::vector<double> v) {
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) m = 0.5 * (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)));
  return m;
}

// Robust sd: 1.4826 x the median absolute deviation from the median.
double robust_sd(const std::vector<double>& v) {
  const double m = median_of(v);
  std::vector<double> dev(v.size());
  for (std::size_t i = 0; i < v.size(); ++i) dev[i] = std::fabs(v[i] - m);
  return kMadToSd * median_of(dev);
}

// P(X < a, Y < a) for standard bivariate normal (X, Y) with correlation rho in [0, 1):
// integral over x < a of phi(x) Phi((a - rho x) / sqrt(1 - rho^2)), Simpson's rule on 12 sds.
double standard_both_below(double a, double rho) {
  if (rho <= 0) return normal_cdf(a) * normal_cdf(a);
  const double s = std::sqrt(1.0 - rho * rho);
  constexpr int kIntervals = 600;  // even
  const double lo = std::min(a, 0.0) - 12.0, h = (a - lo) / kIntervals;
  double sum = 0;
  for (int i = 0; i <= kIntervals; ++i) {
    const double x = lo + i * h;
    const double f = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI) * normal_cdf((a - rho * x) / s);
    sum += f * (i == 0 || i == kIntervals ? 1 : i % 2 ? 4 : 2);
  }
  return std::clamp(sum * h / 3.0, 0.0, 1.0);
}

}  // namespace

double ZombieNull::both_below(double t) const {
  if (!estimated || table_oscillates) {
    // Random directions: the two windows independent; with too few rows to estimate, taken as
    // one window (correlation 1), the least the table could say.
    const double one = normal_cdf(t / chance_spread);
    return estimated ? one * one : one;
  }
  const double a = (t - centre) / spread;
  return correlation >= 1 ? normal_cdf(a) : standard_both_below(a, correlation);
}

double ZombieNull::z_of(double window_mean) const {
  const bool table = estimated && !table_oscillates;
  return ((table ? centre : 0.0) - window_mean) / (table ? spread : chance_spread);
}

ZombieNull estimate_zombie_null(const std::vector<ZombieWindows>& windows, int64_t dim, int window,
                                const Thresholds& t) {
  ZombieNull n;
  n.rows = static_cast<int64_t>(windows.size());
  n.chance_spread = 1.0 / std::sqrt(static_cast<double>(dim) * window);
  n.threshold = std::min(t.zombie_oscillation, -t.zombie_z * n.chance_spread);
  n.spread = n.chance_spread;
  if (n.rows < kZombieNullMinRows) return n;
  n.estimated = true;
  std::vector<double> pooled, sums, diffs;
  pooled.reserve(2 * windows.size());
  for (const ZombieWindows& w : windows) {
    pooled.push_back(w.prior_cosine);
    pooled.push_back(w.last_cosine);
    sums.push_back(w.last_cosine + w.prior_cosine);
    diffs.push_back(w.last_cosine - w.prior_cosine);
  }
  n.centre = median_of(pooled);
  n.spread = std::max(robust_sd(pooled), n.chance_spread);
  // Var(X + Y) = 2 s^2 (1 + rho), Var(X - Y) = 2 s^2 (1 - rho).
  const double ss = std::pow(robust_sd(sums), 2), dd = std::pow(robust_sd(diffs), 2);
  n.correlation = ss + dd > 0 ? std::clamp((ss - dd) / (ss + dd), 0.0, kMaxCorrelation) : kMaxCorrelation;
  n.table_oscillates = n.centre < t.zombie_oscillation;
  if (!n.table_oscillates) n.threshold = std::min(n.threshold, n.centre - t.zombie_z * n.spread);
  return n;
}

}  // namespace gradscope
