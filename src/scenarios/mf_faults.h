// Faults planted in the matrix-factorisation run, each a bug a recommender really has, so the
// embedding findings can be checked against runs whose truth is known (bench/fault_validation).
//
//   MfOptions o;
//   o.faults.oscillate_factor = 1.9;     // true oscillation on every 4th item row
//   o.faults.negatives_from_top = 20;    // broken negative sampler
//   o.faults.unsampled_items = 100;      // the last 100 item ids are never drawn
//
// All off by default (the healthy run).
#pragma once

#include <cstdint>

namespace gradscope::scenarios {

struct MfFaults {
  /// True oscillation: after each optimizer step, every item row of the batch whose id is a
  /// multiple of oscillate_every gets e <- (1 - oscillate_factor) e: an L2 penalty l2 ||e||^2
  /// applied as a decoupled step (as AdamW applies weight decay) with lr x 2 x l2 =
  /// oscillate_factor. Past 1 the step overshoots the penalty's minimum (0) and the row
  /// flips sign update after update; 0 is off.
  double oscillate_factor = 0;
  int64_t oscillate_every = 4;
  /// Broken negative sampler: > 0 draws negatives only from this many most popular items
  /// (by training positives, ties by the lower id) instead of all items.
  int64_t negatives_from_top = 0;
  /// Rows never sampled: > 0 makes the sampler's item range stop this many ids short, so
  /// ids >= items - unsampled_items are never drawn, neither their positives (dropped from
  /// every epoch) nor as negatives.
  int64_t unsampled_items = 0;
};

/// Throws Error naming the field when a fault does not fit a table of `items` rows.
void check_faults(const MfFaults& faults, int64_t items);

}  // namespace gradscope::scenarios
