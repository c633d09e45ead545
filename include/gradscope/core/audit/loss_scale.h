// Mixed precision: the audited steps trained with a loss scale, those whose gradients
// overflowed at it and whose optimizer step was skipped, how the scale moved, and the verdict
// on it (the LOSS_SCALE_OVERFLOW finding). A skipped step is the scaler doing its job, not a
// fault of the model: its gradients are left out of the module rules (no NAN or INF from them).
//
//   gradscope::LossScaleReport ls;
//   gradscope::add_loss_scale_step(ls, step, 65536, /*skipped=*/true);   // per audited step
//   gradscope::judge_loss_scale(ls);          // ls.verdict: kNone, kInfo or kWarning
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

namespace gradscope {

struct LossScaleReport {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  /// kInfo: skips were rare and the scale fit again (what a loss scaler is for); kWarning:
  /// skips persist at the end of the run, the scale never fit, it fell below 1 or skips are
  /// frequent after it first fit (see judge_loss_scale).
  enum class Verdict : uint8_t { kNone, kInfo, kWarning };

  int64_t steps = 0;              ///< audited steps trained with a loss scale
  int64_t skipped = 0;            ///< of them, overflowed and skipped
  int64_t first_skipped = -1;
  int64_t last_skipped = -1;
  int64_t first_fit = -1;         ///< first audited step that was not skipped; -1: none
  int64_t steps_after_fit = 0;    ///< audited steps from first_fit on
  int64_t skipped_after_fit = 0;  ///< skipped steps after first_fit
  int64_t trailing_skipped = 0;   ///< skipped steps in a row at the end
  double first_scale = kNone;     ///< the scale of the first audited step
  double last_scale = kNone;
  double min_scale = kNone;
  /// The skipped steps, and (step, scale) where the scale differed from the audited step
  /// before (the first step included): the first kListed of each are kept, the counts above
  /// are exact however many there are.
  static constexpr std::size_t kListed = 1000;
  std::vector<int64_t> skipped_steps;
  std::vector<std::pair<int64_t, double>> scale_changes;
  Verdict verdict = Verdict::kNone;

  bool found() const { return skipped > 0; }
};

/// "none", "info" or "warning": the verdict as the JSON and the Python module name it.
const char* loss_scale_verdict_name(LossScaleReport::Verdict verdict);

/// Counts audited step `step` (later than any added before), trained at `scale`.
void add_loss_scale_step(LossScaleReport& report, int64_t step, double scale, bool skipped);

/// Sets report.verdict from the counts (the thresholds are in loss_scale.cpp, with why).
void judge_loss_scale(LossScaleReport& report);

}  // namespace gradscope
