// EmbeddingProfile: the distributions behind an embedding report, for charts: who gets the
// exposure (Lorenz curve, Gini), how fast rows move (velocity histogram) and whether they
// thrash (oscillation histogram).
//
//   gradscope::EmbeddingProfile p = gradscope::profile_embedding("item_emb", rows);
//   for (const auto& [rows_share, exposure_share] : p.lorenz) ...
//
// Pure function of EmbeddingRows, O(rows log rows) once at the end of a run (never per step).
// Only exposed rows enter the distributions, as in the report's Gini.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/embedding/rows.h"

namespace gradscope {

/// Counts in bins [edges[i], edges[i+1]); the last bin also holds its upper edge.
/// edges.size() == counts.size() + 1, edges ascending. Empty when there were no values.
/// A log-spaced range whose smallest and largest values are equal spans one decade from it.
struct Histogram {
  std::vector<double> edges;
  std::vector<int64_t> counts;
  int64_t below = 0;      ///< values left out under edges.front() (e.g. zero on a log axis)
  int64_t nonfinite = 0;  ///< NaN or infinite values, left out
};

struct EmbeddingProfile {
  std::string layer;
  int64_t num_embeddings = 0;
  int64_t exposed_rows = 0;
  /// Lorenz curve of exposure counts over exposed rows, rows sorted by exposure ascending:
  /// (share of rows, share of exposures), from (0, 0) to (1, 1), at most `lorenz_points`
  /// points evenly spaced in the share of rows. Empty when no row was exposed.
  std::vector<std::pair<double, double>> lorenz;
  double popularity_gini = 0;  ///< gini() of the same counts (NaN: none exposed)
  /// Exposure counts, log10-spaced bins from 1 to the largest count.
  Histogram exposure;
  /// Velocity EMA of exposed rows, log10-spaced bins between the smallest positive and the
  /// largest velocity; rows with velocity 0 are counted in `below`.
  Histogram velocity;
  /// Oscillation EMA of exposed rows, `bins` equal bins over [-1, 1].
  Histogram oscillation;
};

/// Profiles a table. Throws Error when bins < 1 or lorenz_points < 2.
EmbeddingProfile profile_embedding(const std::string& layer, const EmbeddingRows& rows,
                                   int bins = 20, int lorenz_points = 101);

}  // namespace gradscope
