// The windowed zombie rule: a row flips direction when the mean cosine between its consecutive
// real updates stays below chance and below an effect size for two windows in a row.
#include <algorithm>
#include <cmath>
#include <limits>

#include "gradscope/core/embedding/report.h"

namespace gradscope {

double zombie_cosine_threshold(const Thresholds& t, int64_t dim) {
  // Cosines of independent directions in `dim` dimensions: mean 0, sd 1 / sqrt(dim); the mean
  // of a window of them: sd 1 / sqrt(dim x window). A window below -z of those sds happens by
  // chance with probability Phi(-z) (1.3e-3 for z = 3).
  const double chance = -t.zombie_z / std::sqrt(static_cast<double>(dim) * t.zombie_window);
  return std::min(t.zombie_oscillation, chance);
}

namespace {

// Two complete windows below the threshold, the last not damped.
bool oscillated_in_windows(const EmbeddingRows& rows, const ZombieWindows& w, const Thresholds& t) {
  if (w.completed < 2) return false;
  const double below = zombie_cosine_threshold(t, rows.dim());
  return w.last_cosine < below && w.prior_cosine < below && w.last_norm >= t.zombie_damping * w.prior_norm;
}

// The updates since the last complete window, half a window of them or more, no longer point
// back on average. A row that reversed for 32 updates and then moved on (mean cosine +0.10 over
// its last 13) was flagged from its stale windows at confidence 1.00.
bool stopped_reversing(const ZombieWindows& w, const Thresholds& t) {
  return 2 * w.current_updates >= t.zombie_window && !(w.current_cosine < 0);
}

}  // namespace

bool is_windowed_zombie(const EmbeddingRows& rows, int64_t row, const Thresholds& t) {
  const ZombieWindows w = rows.windows(row);
  return oscillated_in_windows(rows, w, t) && !stopped_reversing(w, t);
}

bool stopped_zombie(const EmbeddingRows& rows, int64_t row, const Thresholds& t) {
  const ZombieWindows w = rows.windows(row);
  return oscillated_in_windows(rows, w, t) && stopped_reversing(w, t);
}

double zombie_z_score(const EmbeddingRows& rows, int64_t row, const Thresholds& t) {
  const ZombieWindows w = rows.windows(row);
  if (w.completed < 2) return std::numeric_limits<double>::quiet_NaN();
  return -std::max(w.last_cosine, w.prior_cosine) * std::sqrt(static_cast<double>(rows.dim()) * t.zombie_window);
}

}  // namespace gradscope
