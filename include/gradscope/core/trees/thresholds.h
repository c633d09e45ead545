// TreeThresholds: every number the boosted-tree rules (dynamics.h) compare against, in one
// struct, with the defaults docs/trees.md justifies from measurements on real data.
//
//   gradscope::TreeThresholds t;          // stall 5%, tail 1%, overfit +2% and z 3, ...
//   t.concentrated_share = 0.6;           // stricter leakage check
//   t.validate();                         // throws gradscope::Error for nonsense values
//
// They are separate from Thresholds (audit/thresholds.h) because they judge boosting rounds, not
// tensors, and a tree run saves them beside its findings (trees.json), so a run is always
// read with the thresholds that judged it. Comparisons are strict: a value equal to a
// threshold passes.
#pragma once

#include <vector>

#include "gradscope/core/threshold_field.h"

namespace gradscope {

/// Thresholds of STAGNANT, OVERFITTING, EXPLODING, CONCENTRATED and the interaction filter.
struct TreeThresholds {
  /// Rounds per window of the views (the timeline, concentration and drift); 0 picks
  /// max(5, ceil(rounds / 20)): at most about 20 windows, each of at least 5 rounds so one
  /// odd tree does not make a window. The rules judge on windows of that automatic size
  /// whatever this says, so a view never changes a verdict.
  int window = 0;
  /// STAGNANT (stalled): with labels, all rounds together removed less than this share of the
  /// training loss of the base score. A working learning rate memorises even random labels
  /// (docs/trees.md), so a model this flat did not learn: its learning rate is too small.
  double stall_loss_drop = 0.05;
  /// STAGNANT (tail): every round from N on moves the predictions (mean |round output| over
  /// the reference rows) by less than this fraction of the busiest window's mean, for at
  /// least stagnant_rounds rounds: those rounds add nothing, stop at N.
  double stagnant_fraction = 0.01;
  int stagnant_rounds = 10;
  /// OVERFITTING: the validation loss of the whole model exceeds its lowest value (after
  /// round N) by more than overfit_rise (relative), the rise per row is more than overfit_z
  /// standard errors (paired over the validation rows: not a few rows' luck), the lowest point
  /// is at least overfit_rounds rounds before the end, and the training loss fell meanwhile.
  double overfit_rise = 0.02;
  double overfit_z = 3.0;
  int overfit_rounds = 10;
  /// OVERFITTING below overfit_z: a relative rise above this (with the other conditions) is
  /// still reported, as a finding whose computed confidence says how sure it is (a small
  /// validation set cannot show a real rise at overfit_z). docs/trees.md has the measurements.
  double overfit_large_rise = 0.5;
  /// EXPLODING: a window's mean contribution (mean |leaf value| without data) exceeds this
  /// many times the smallest window mean before it, every round of it moves more than any of
  /// that window's, and with labels the training loss rose over it. Healthy boosting shrinks
  /// its steps; a converged model's late corrections come and go while its loss falls.
  double exploding_growth = 2.0;
  /// CONCENTRATED: one feature carries more than this share of the model's split gain (of its
  /// splits when the file has no gains): possible leakage. A label copy with noise of a quarter
  /// of the label's sd took 98.7-100% on real data, the strongest real feature at most 82%.
  double concentrated_share = 0.9;
  /// Interaction suggestions drop a pair whose variance inflation factor 1 / (1 - r^2) on the
  /// data exceeds this (|r| > 0.894): the stricter of the textbook cuts (5 and 10), because
  /// breast_cancer's near-duplicates at r 0.91 (VIF 5.8) passed 10 as an "interaction".
  double interaction_vif = 5.0;
  /// Interaction pairs listed.
  int max_interactions = 10;

  /// Throws Error naming the first threshold that is NaN, negative or out of range.
  void validate() const;
};

/// Every field of TreeThresholds with its valid range, in declaration order: validation, the
/// tree documents and the Python binding read it (src/core/trees/thresholds.cpp).
const std::vector<ThresholdField<TreeThresholds>>& tree_threshold_fields();

}  // namespace gradscope
