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
bool oscillated_in_windows(const ZombieWindows& w, double below, const Thresholds& t) {
  return w.completed >= 2 && w.last_cosine < below && w.prior_cosine < below &&
         w.last_norm >= t.zombie_damping * w.prior_norm;
}

// The updates since the last complete window, half a window of them or more, no longer point
// back on average. A row that reversed for 32 updates and then moved on (mean cosine +0.10 over
// its last 13) was flagged from its stale windows at confidence 1.00.
bool stopped_reversing(const ZombieWindows& w, int window) {
  return 2 * w.current_updates >= window && !(w.current_cosine < 0);
}

}  // namespace

ZombieVerdict judge_zombie_windows(const ZombieWindows& w, int window, double below, const Thresholds& t) {
  if (w.completed < 2) return ZombieVerdict::kNotJudged;
  if (!oscillated_in_windows(w, below, t)) return ZombieVerdict::kHealthy;
  return stopped_reversing(w, window) ? ZombieVerdict::kStopped : ZombieVerdict::kZombie;
}

bool is_windowed_zombie(const EmbeddingRows& rows, int64_t row, const Thresholds& t) {
  return judge_zombie_windows(rows.windows(row), t.zombie_window, zombie_cosine_threshold(t, rows.dim()), t) ==
         ZombieVerdict::kZombie;
}

bool stopped_zombie(const EmbeddingRows& rows, int64_t row, const Thresholds& t) {
  return judge_zombie_windows(rows.windows(row), t.zombie_window, zombie_cosine_threshold(t, rows.dim()), t) ==
         ZombieVerdict::kStopped;
}

double zombie_z_score(const EmbeddingRows& rows, int64_t row, const Thresholds& t) {
  const ZombieWindows w = rows.windows(row);
  if (w.completed < 2) return std::numeric_limits<double>::quiet_NaN();
  return -std::max(w.last_cosine, w.prior_cosine) * std::sqrt(static_cast<double>(rows.dim()) * t.zombie_window);
}

}  // namespace gradscope
