// The zombie rule's null: how a row's window means of consecutive-update cosines spread when
// the row does not oscillate, estimated from the table itself.
//
//   std::vector<ZombieWindows> w = ...;                       // rows with two complete windows
//   ZombieNull null = estimate_zombie_null(w, dim, window, thresholds);
//   double p = null.both_below(null.threshold);               // a healthy row passing by chance
//
// Random directions give a window mean the spread 1 / sqrt(dim x window), but real tables
// spread far wider (a BPR run on plain SGD: 0.458 per cosine against 0.177), and a row's two
// windows are correlated (a burst spans both): under that model window pairs passed 6e-5 of the
// time against a predicted 3e-23. So the null is the table's own typical row: the median of the
// window means (centre), their spread by the median absolute deviation, and the correlation of
// a row's two windows by the robust sum-and-difference estimate (Gnanadesikan and Kettenring
// 1972), all robust to a minority of oscillating rows. docs/embedding.md has the calibration.
#pragma once

#include <cstdint>
#include <vector>

#include "gradscope/core/vocabulary/thresholds.h"
#include "gradscope/core/embedding/rows.h"

namespace gradscope {

/// Fewer rows with two windows than this: the spread cannot be estimated, and chance is that
/// of random directions with the two windows taken as one (the conservative extreme).
constexpr int64_t kZombieNullMinRows = 30;

struct ZombieNull {
  int64_t rows = 0;          ///< rows whose windows estimated it
  bool estimated = false;    ///< rows >= kZombieNullMinRows
  /// The table's median window itself lies below zombie_oscillation: the typical row reverses,
  /// so the table is no null for its rows, and chance is that of random directions.
  bool table_oscillates = false;
  double centre = 0;         ///< median window mean over the rows (0 when not estimated)
  double spread = 0;         ///< sd of a window mean: max(1.4826 MAD, chance_spread)
  double correlation = 1;    ///< between a row's two windows, in [0, 0.99] (1: taken as one)
  double chance_spread = 0;  ///< 1 / sqrt(dim x window): random directions
  /// A window oscillates below this: min(zombie_oscillation, -zombie_z x chance_spread,
  /// centre - zombie_z x spread (when estimated and the table does not oscillate)).
  double threshold = 0;

  /// P(both windows of a row below `t`) under the null: bivariate normal with this centre,
  /// spread and correlation (random directions when not estimated or the table oscillates).
  double both_below(double t) const;
  /// How many spreads below the null's centre a window mean lies.
  double z_of(double window_mean) const;
};

/// The null of rows whose windows (two complete each) are `windows`, in `dim` dimensions with
/// `window` cosines a window.
ZombieNull estimate_zombie_null(const std::vector<ZombieWindows>& windows, int64_t dim, int window,
                                const Thresholds& t);

}  // namespace gradscope
