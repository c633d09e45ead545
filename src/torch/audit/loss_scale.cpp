// Audit: mixed precision. Gradients of a scaled loss are measured with the thresholds scaled
// alike and divided back (core/stats/scaled.h); a step that overflowed at its scale and was
// skipped is the scaler doing its job: counted in report().loss_scale, its gradient and update
// records left out of the module rules.
#include <algorithm>
#include <cmath>
#include <limits>

#include "audit/state.h"
#include "gradscope/core/error.h"
#include "gradscope/core/vocabulary/numbers.h"
#include "gradscope/core/stats/scaled.h"

namespace gradscope::torch {
namespace {

bool gradient_site(Site site) {
  return site == Site::kOutputGrad || site == Site::kParamGrad || site == Site::kUpdate;
}

}  // namespace

void Audit::set_loss_scale(double scale, bool parameter_grads_unscaled) {
  // At most float32's largest: a scaler's scale is a float32, and the statistics are divided
  // by its square (core/stats/scaled.h), which must stay finite.
  if (!std::isfinite(scale) || scale <= 0 || scale > std::numeric_limits<float>::max())
    throw Error("audit: set_loss_scale: the scale must be finite, > 0 and at most float32's largest (3.4e38), got " +
                shown_number(scale));
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->loss_scale = scale;
  state_->has_loss_scale = true;
  state_->param_grads_unscaled = parameter_grads_unscaled;
}

StatsOptions Audit::State::options_for(double scale) const {
  return scale == 1 ? stats_options : scaled_thresholds(stats_options, scale);
}

void Audit::State::settle_loss_scale(int64_t at_step) {
  if (!has_loss_scale) return;
  // Overflowed: some parameter gradient is not finite. Skipped: no parameter changed at all
  // (an optimizer that stepped on them would have written NaN, which the update shows).
  bool overflowed = false, changed = false;
  for (const EntrySums& x : sums) {
    if (x.any_grad && (x.grad.nan > 0 || x.grad.inf() > 0)) overflowed = true;
    if (x.any_update && (x.update.max_abs != 0 || x.update.finite != x.update.count)) changed = true;
  }
  const bool skipped = overflowed && !changed;
  add_loss_scale_step(loss_scale_report, at_step, loss_scale, skipped);
  if (!skipped) return;
  auto& records = current.records;
  records.erase(std::remove_if(records.begin(), records.end(),
                               [&](const Record& r) { return r.step == at_step && gradient_site(r.site); }),
                records.end());
  auto& histograms = current.histograms;
  histograms.erase(std::remove_if(histograms.begin(), histograms.end(),
                                  [&](const ElementHistogram& h) { return h.step == at_step && h.site != Site::kActivation; }),
                   histograms.end());
  for (auto& [index, channel] : pending_channels) channel.output_grad.clear();
}

}  // namespace gradscope::torch
