#include "gradscope/core/embedding/profile.h"

#include <algorithm>
#include <cmath>

#include "gradscope/core/embedding/math.h"
#include "gradscope/core/error.h"

namespace gradscope {
namespace {

// `bins` edges log10-spaced from lo to hi (lo > 0); one decade from lo when hi <= lo. The
// end edges are lo and hi exactly, so the smallest and largest values fall inside.
std::vector<double> log_edges(double lo, double hi, int bins) {
  if (hi <= lo) hi = lo * 10.0;
  const double a = std::log10(lo), b = std::log10(hi);
  std::vector<double> edges(static_cast<std::size_t>(bins) + 1);
  for (int i = 0; i <= bins; ++i) edges[i] = std::pow(10.0, a + (b - a) * i / bins);
  edges.front() = lo;
  edges.back() = hi;
  return edges;
}

// Counts `values` into the bins `edges` makes (none when `edges` is empty). A bin is found by
// searching the edges themselves, so a value on an edge lands where the edges say.
Histogram count_into(const std::vector<double>& values, std::vector<double> edges) {
  Histogram h;
  if (!edges.empty()) h.counts.assign(edges.size() - 1, 0);
  for (const double v : values) {
    if (!std::isfinite(v)) {
      ++h.nonfinite;
    } else if (edges.empty() || v < edges.front()) {
      ++h.below;
    } else {
      const auto above = std::upper_bound(edges.begin(), edges.end(), v);
      const auto bin = std::min<std::size_t>(static_cast<std::size_t>(above - edges.begin()) - 1,
                                             h.counts.size() - 1);
      ++h.counts[bin];
    }
  }
  h.edges = std::move(edges);
  return h;
}

// Log-spaced bins between the smallest positive and the largest finite value; values <= 0
// count as `below`. No bins when no value is positive.
Histogram log_histogram(const std::vector<double>& values, int bins) {
  double lo = INFINITY, hi = 0.0;
  for (const double v : values)
    if (std::isfinite(v) && v > 0.0) lo = std::min(lo, v), hi = std::max(hi, v);
  if (!std::isfinite(lo)) return count_into(values, {});
  return count_into(values, log_edges(lo, hi, bins));
}

// (share of rows, share of exposures) at `points` evenly spaced row shares, interpolating
// linearly between whole rows, as the Lorenz curve of a finite population is drawn.
std::vector<std::pair<double, double>> lorenz_curve(std::vector<double> counts, int points) {
  std::vector<std::pair<double, double>> curve;
  if (counts.empty()) return curve;
  std::sort(counts.begin(), counts.end());
  const auto n = static_cast<int64_t>(counts.size());
  std::vector<double> cumulative(counts.size() + 1, 0.0);  // exact: integer counts < 2^53
  for (int64_t i = 0; i < n; ++i) cumulative[i + 1] = cumulative[i] + counts[i];
  const double total = cumulative.back();
  const int64_t m = std::min<int64_t>(points, n + 1);
  for (int64_t k = 0; k < m; ++k) {
    // Row position k * n / (m - 1) as a whole part and a remainder, so whole rows are exact.
    const int64_t whole = k * n / (m - 1), rest = k * n % (m - 1);
    double share = cumulative[whole] / total;
    if (rest != 0) share += static_cast<double>(rest) / (m - 1) * counts[whole] / total;
    curve.emplace_back(static_cast<double>(k) / (m - 1), share);
  }
  return curve;
}

}  // namespace

EmbeddingProfile profile_embedding(const std::string& layer, const EmbeddingRows& rows, int bins,
                                   int lorenz_points) {
  if (bins < 1)
    throw Error("embedding profile '" + layer + "': bins must be >= 1, got " + std::to_string(bins));
  if (lorenz_points < 2)
    throw Error("embedding profile '" + layer + "': lorenz_points must be >= 2, got " +
                std::to_string(lorenz_points));
  EmbeddingProfile p;
  p.layer = layer;
  p.num_embeddings = rows.rows();
  std::vector<double> exposure, velocity, oscillation;
  for (int64_t r = 0; r < rows.rows(); ++r) {
    if (rows.exposure(r) == 0) continue;
    exposure.push_back(rows.exposure(r));
    velocity.push_back(rows.velocity(r));
    // A cosine EMA lies in [-1, 1]; float rounding may step just outside.
    const double o = rows.oscillation(r);
    oscillation.push_back(std::isfinite(o) ? std::clamp(o, -1.0, 1.0) : o);
  }
  p.exposed_rows = static_cast<int64_t>(exposure.size());
  p.popularity_gini = gini(exposure);
  p.lorenz = lorenz_curve(exposure, lorenz_points);
  if (exposure.empty()) return p;
  p.exposure = count_into(exposure, log_edges(1.0, *std::max_element(exposure.begin(), exposure.end()), bins));
  p.velocity = log_histogram(velocity, bins);
  std::vector<double> edges(static_cast<std::size_t>(bins) + 1);
  for (int i = 0; i <= bins; ++i) edges[i] = -1.0 + 2.0 * i / bins;
  p.oscillation = count_into(oscillation, std::move(edges));
  return p;
}

}  // namespace gradscope
