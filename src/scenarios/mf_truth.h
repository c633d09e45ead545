// The ground truth of one matrix-factorisation run, measured by the run's own code (never by
// the tracker), and the evidence lines that set it beside each embedding finding: what the
// demo prints under its MF block and bench/fault_validation tallies.
//
//   MfTruth truth(data, options.dim);
//   options.on_update = [&](const MfStep& s) { truth.add(s); };
//   MfRun run = train_matrix_factorization(data, options);
//   for (const std::string& line : truth.evidence(run, 1)) std::cout << line << "\n";  // item table
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "draw_counts.h"
#include "gradscope/core/embedding/report.h"
#include "gradscope/core/embedding/rows.h"
#include "interactions.h"
#include "matrix_factorization.h"
#include "update_cosines.h"

namespace gradscope::scenarios {

/// A row truly oscillates when its whole-run mean cosine between consecutive real updates is
/// at most kOscillatingCosine over at least kMinCosines cosines: far below anything random
/// directions give (mean 0, standard deviation 1 / sqrt(dim x cosines)).
constexpr double kOscillatingCosine = -0.3;
constexpr int64_t kMinCosines = 10;

class MfTruth {
 public:
  MfTruth(const Interactions& data, int64_t dim);
  /// One step's draws and row movements.
  void add(const MfStep& step);

  /// Per table (0 user, 1 item): consecutive-update cosines.
  const UpdateCosines& cosines(int table) const { return table == 0 ? users_ : items_; }
  const DrawCounts& draws() const { return draws_; }
  /// Rows that truly oscillate (see kOscillatingCosine).
  std::set<int64_t> oscillating(int table) const;
  /// Rows never drawn by the sampler or drawn but never really updated.
  std::set<int64_t> dead(int table) const;
  /// One line per finding of `run`'s table `table`, and one for what this code measured, for
  /// a reader to check the finding against, e.g. "ZOMBIE_ROWS: 1541 rows flagged; ...".
  std::vector<std::string> evidence(const MfRun& run, int table) const;

 private:
  UpdateCosines users_, items_;
  DrawCounts draws_;
};

/// Every row `type` (ZOMBIE_ROWS, DEAD_ROWS) flags in `report`'s table: the rules run again on
/// the tracker's rows with every flagged row listed; `rule` picks the zombie rule (the
/// default, or GradTracer's for comparison).
std::vector<int64_t> flagged_rows(const EmbeddingRows& rows, const EmbeddingReport& report,
                                  const std::string& type,
                                  ZombieRule rule = ZombieRule::kWindowed);

}  // namespace gradscope::scenarios
