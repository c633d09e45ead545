// Ground truth for ZOMBIE_ROWS, kept apart from the tracker: each row's cosine between
// consecutive real updates, from the row's values before and after every step (MfStep), in
// double precision and with no EMA, window or threshold of the tracker's.
//
//   UpdateCosines truth(items, dim);
//   o.on_update = [&](const MfStep& s) { truth.add(s.item_rows, s.item_before, s.item_after); };
//   ... train ...
//   double m = truth.mean_cosine(row);   // whole-run mean; NaN before two real updates
//
// A real update is one with ||after - before|| > 1e-6 x ||before|| (the tracker documents the
// same definition, Thresholds::update_ratio_lo, so both count the same updates).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace gradscope::scenarios {

class UpdateCosines {
 public:
  /// A table of `rows` x `dim`. Throws Error for sizes below 1.
  UpdateCosines(int64_t rows, int64_t dim, double update_ratio_lo = 1e-6);
  /// One step: `ids` (int64, unique) and their rows before and after (float32, n x dim).
  /// Throws Error naming the mismatch for shapes that do not fit or ids out of range.
  void add(const at::Tensor& ids, const at::Tensor& before, const at::Tensor& after);

  int64_t rows() const { return rows_; }
  /// Real updates of the row.
  int64_t updates(int64_t row) const { return updates_[row]; }
  /// Cosines between consecutive real updates of the row, in order (updates - 1 of them).
  const std::vector<float>& cosines(int64_t row) const { return cosines_[row]; }
  /// ||update|| of each real update of the row, in order.
  const std::vector<float>& norms(int64_t row) const { return norms_[row]; }
  /// Mean of cosines(row); NaN when there are none.
  double mean_cosine(int64_t row) const;
  /// Mean of the last `k` cosines (all when fewer); NaN when there are none.
  double recent_mean_cosine(int64_t row, int64_t k) const;

  /// The last two complete windows of `k` cosines, as docs/embedding.md defines the windowed
  /// zombie rule's: windows from the row's first cosine on, not overlapping, the one still
  /// filling left out; each window's mean cosine and the mean norm of the updates that ended
  /// its cosines (cosine c ends update c + 1). Recomputed here, not read from the tracker, so
  /// a row the tracker did not flag can be checked against the rule's own clauses.
  struct Windows {
    int64_t completed = 0;  ///< complete windows, all of them (not capped at 2)
    double last_cosine = 0, last_norm = 0, prior_cosine = 0, prior_norm = 0;
  };
  Windows windows(int64_t row, int64_t k) const;

 private:
  int64_t rows_, dim_;
  double ratio_;
  std::vector<int64_t> updates_;
  std::vector<double> previous_;  // rows x dim: the last real update
  std::vector<std::vector<float>> cosines_, norms_;
};

}  // namespace gradscope::scenarios
