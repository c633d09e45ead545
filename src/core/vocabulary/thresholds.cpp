#include "gradscope/core/vocabulary/thresholds.h"

#include <cmath>
#include <cstdint>
#include <string>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

using Field = ThresholdField<Thresholds>;

// The ranges a threshold can have, with their words.
Field fraction(const char* name, double Thresholds::*m) { return {name, m, nullptr, 0, 1, false, false, "must be in [0, 1]"}; }
Field nonnegative(const char* name, double Thresholds::*m) {
  return {name, m, nullptr, 0, INFINITY, false, false, "must be finite and >= 0"};
}
Field counted(const char* name, int Thresholds::*m, double hi, const char* rule) {
  return {name, nullptr, m, 1, hi, false, false, rule};
}

}  // namespace

const std::vector<Field>& threshold_fields() {
  static const std::vector<Field> kFields = {
      nonnegative("grad_lo", &Thresholds::grad_lo),
      nonnegative("grad_hi", &Thresholds::grad_hi),
      nonnegative("activation_saturation", &Thresholds::activation_saturation),
      fraction("saturation_frac", &Thresholds::saturation_frac),
      nonnegative("dead_eps", &Thresholds::dead_eps),
      fraction("dead_frac", &Thresholds::dead_frac),
      nonnegative("update_ratio_lo", &Thresholds::update_ratio_lo),
      counted("stagnant_steps", &Thresholds::stagnant_steps, INT32_MAX, "must be >= 1"),
      fraction("channel_frac", &Thresholds::channel_frac),
      fraction("ignored_channel_ratio", &Thresholds::ignored_channel_ratio),
      fraction("leakage_cka", &Thresholds::leakage_cka),
      counted("zombie_window", &Thresholds::zombie_window, 65535, "must be in [1, 65535]"),
      nonnegative("zombie_z", &Thresholds::zombie_z),
      fraction("zombie_damping", &Thresholds::zombie_damping),
      nonnegative("zombie_min_exposure", &Thresholds::zombie_min_exposure),
      {"zombie_oscillation", &Thresholds::zombie_oscillation, nullptr, -1, 1, false, false, "must be in [-1, 1]"},
      nonnegative("zombie_velocity_ratio", &Thresholds::zombie_velocity_ratio),
      fraction("velocity_ema", &Thresholds::velocity_ema),
      fraction("oscillation_ema", &Thresholds::oscillation_ema),
      fraction("flow_critical_ratio", &Thresholds::flow_critical_ratio),
      fraction("flow_problems_ratio", &Thresholds::flow_problems_ratio),
      fraction("flow_minor_ratio", &Thresholds::flow_minor_ratio),
      nonnegative("attention_logit_hi", &Thresholds::attention_logit_hi),
      fraction("attention_entropy_floor", &Thresholds::attention_entropy_floor),
      fraction("attention_entropy_drop", &Thresholds::attention_entropy_drop),
      counted("attention_persist_steps", &Thresholds::attention_persist_steps, 65535, "must be in [1, 65535]"),
      nonnegative("spike_sigma", &Thresholds::spike_sigma),
      {"spike_window", nullptr, &Thresholds::spike_window, 2, 1 << 20, false, false, "must be in [2, 1048576]"},
      counted("spike_min_history", &Thresholds::spike_min_history, 1 << 20, "must be in [1, 1048576]"),
      {"spike_early_factor", &Thresholds::spike_early_factor, nullptr, 1, INFINITY, false, false,
       "must be finite and >= 1"},
      counted("spike_early_steps", &Thresholds::spike_early_steps, 1 << 20, "must be in [1, 1048576]"),
      counted("divergence_steps", &Thresholds::divergence_steps, 65535, "must be in [1, 65535]"),
      {"spike_lookback", nullptr, &Thresholds::spike_lookback, 0, 65535, false, false, "must be in [0, 65535]"},
      {"grad_spike_ratio", &Thresholds::grad_spike_ratio, nullptr, 1, INFINITY, false, false, "must be finite and >= 1"},
      {"depth_grad_ratio", &Thresholds::depth_grad_ratio, nullptr, 1, INFINITY, false, false, "must be finite and >= 1"},
      counted("depth_window", &Thresholds::depth_window, 1000, "must be in [1, 1000]"),
      fraction("plateau_fall", &Thresholds::plateau_fall),
  };
  return kFields;
}

void Thresholds::validate() const {
  validate_fields(*this, threshold_fields(), "threshold");
  // The orders between thresholds, which no single field's range says.
  if (!(grad_lo < grad_hi))
    throw Error("threshold grad_lo = " + std::to_string(grad_lo) + ": must be below grad_hi");
  if (!(flow_minor_ratio <= flow_problems_ratio && flow_problems_ratio <= flow_critical_ratio))
    throw Error("threshold flow_problems_ratio = " + std::to_string(flow_problems_ratio) +
                ": must lie between flow_minor_ratio and flow_critical_ratio");
}

StatsOptions Thresholds::stats_options(int threads) const {
  StatsOptions o;
  o.dead_eps = dead_eps;
  o.saturation = activation_saturation;
  o.threads = threads;
  return o;
}

}  // namespace gradscope
