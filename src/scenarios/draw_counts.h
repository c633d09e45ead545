// Ground truth for the sampler findings, kept apart from the tracker: what the sampler really
// drew, counted by this code from each batch (MfStep::batch), and the statistics the findings
// claim to measure, computed here in double precision.
//
//   DrawCounts draws(data.users, data.items);
//   o.on_update = [&](const MfStep& s) { draws.add(s.batch); };
//   ... train ...
//   draws.negative_tv_to_uniform();   // 0 = the negatives were uniform over the items
//   draws.item_lookup_gini();         // over items looked up at least once, per lookup
//   draws.never_drawn_items();        // ids neither drawn as a positive nor as a negative
#pragma once

#include <cstdint>
#include <vector>

#include "bpr_sampler.h"

namespace gradscope::scenarios {

class DrawCounts {
 public:
  DrawCounts(int64_t users, int64_t items);
  /// Counts one batch's users, positives and negatives. Throws Error for ids out of range.
  void add(const BprBatch& batch);

  int64_t negatives(int64_t item) const { return negatives_[item]; }
  int64_t positives(int64_t item) const { return positives_[item]; }
  /// Total-variation distance between the negatives' empirical distribution and the uniform
  /// one over all items: 1/2 sum |n_i / N - 1 / items|. NaN before any negative.
  double negative_tv_to_uniform() const;
  /// Gini of per-lookup counts (every occurrence, positives and negatives) over the rows
  /// looked up at least once; NaN when none. The user table: one lookup per example.
  double item_lookup_gini() const;
  double user_lookup_gini() const;
  /// Item ids never drawn, ascending.
  std::vector<int64_t> never_drawn_items() const;
  /// User ids never drawn, ascending (users whose every positive is held out).
  std::vector<int64_t> never_drawn_users() const;

 private:
  std::vector<int64_t> users_, positives_, negatives_;
};

/// Gini coefficient of the positive values of `counts` (zeros left out), from the sorted
/// values: sum (2i - n - 1) x_i / (n sum x). Written here, not taken from gradscope's core, so
/// the ground truth does not share code with the rule it checks. NaN when none is positive.
double gini_of_positive(std::vector<int64_t> counts);

}  // namespace gradscope::scenarios
