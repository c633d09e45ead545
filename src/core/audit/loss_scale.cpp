// add_loss_scale_step / judge_loss_scale: a loss scaler's skipped steps, and when they are a
// problem rather than the scaler's normal calibration.
#include "gradscope/core/audit/loss_scale.h"

#include <algorithm>
#include <cmath>

namespace gradscope {
namespace {

// A scaler that has lost the fight skips every step from some point on: five audited steps
// in a row at the end of the run is past the few halvings a scale needs to fit again (from
// GradScaler's default 65536, each skip halves it; a run of five brings it down 32x).
constexpr int64_t kPersistingSkips = 5;
// After the scale first fit, a dynamic scaler skips about once per growth interval (it
// doubles the scale after that many clean steps, and the doubling may overflow once):
// GradScaler's default is one in 2000. One in 20 steps is far past that, and three skips
// keep a short run from being judged on one or two.
constexpr double kFrequentSkips = 0.05;
constexpr int64_t kFrequentMinimum = 3;

}  // namespace

const char* loss_scale_verdict_name(LossScaleReport::Verdict verdict) {
  switch (verdict) {
    case LossScaleReport::Verdict::kInfo: return "info";
    case LossScaleReport::Verdict::kWarning: return "warning";
    default: return "none";
  }
}

void add_loss_scale_step(LossScaleReport& r, int64_t step, double scale, bool skipped) {
  if ((r.steps == 0 || scale != r.last_scale) && r.scale_changes.size() < LossScaleReport::kListed)
    r.scale_changes.emplace_back(step, scale);
  if (skipped && r.skipped_steps.size() < LossScaleReport::kListed) r.skipped_steps.push_back(step);
  if (r.steps == 0) r.first_scale = scale;
  ++r.steps;
  r.last_scale = scale;
  r.min_scale = std::isnan(r.min_scale) ? scale : std::min(r.min_scale, scale);
  if (!skipped && r.first_fit < 0) r.first_fit = step;
  if (r.first_fit >= 0) ++r.steps_after_fit;
  if (!skipped) {
    r.trailing_skipped = 0;
    return;
  }
  ++r.skipped;
  ++r.trailing_skipped;
  if (r.first_skipped < 0) r.first_skipped = step;
  r.last_skipped = step;
  if (r.first_fit >= 0) ++r.skipped_after_fit;
}

void judge_loss_scale(LossScaleReport& r) {
  if (r.skipped == 0) {
    r.verdict = LossScaleReport::Verdict::kNone;
    return;
  }
  const bool persisting = r.trailing_skipped >= kPersistingSkips;
  const bool never_fit = r.first_fit < 0 && r.skipped >= kPersistingSkips;
  // Below 1 the scale shrinks the gradients: what overflows is not the float16 range of
  // well-behaved gradients but values that are infinite or NaN at any scale.
  const bool collapsed = r.last_scale < 1.0;
  const bool frequent = r.skipped_after_fit >= kFrequentMinimum &&
                        static_cast<double>(r.skipped_after_fit) >
                            kFrequentSkips * static_cast<double>(r.steps_after_fit);
  r.verdict = persisting || never_fit || collapsed || frequent ? LossScaleReport::Verdict::kWarning
                                                                : LossScaleReport::Verdict::kInfo;
}

}  // namespace gradscope
