#include "gradscope/core/audit/thresholds.h"

#include <cmath>
#include <string>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

void require(bool ok, const char* name, double value, const char* rule) {
  if (!ok) throw Error(std::string("threshold ") + name + " = " + std::to_string(value) + ": " + rule);
}

void require_fraction(const char* name, double v) {
  require(v >= 0 && v <= 1, name, v, "must be in [0, 1]");
}

void require_nonnegative(const char* name, double v) {
  require(std::isfinite(v) && v >= 0, name, v, "must be finite and >= 0");
}

}  // namespace

void Thresholds::validate() const {
  require_nonnegative("grad_lo", grad_lo);
  require_nonnegative("grad_hi", grad_hi);
  require(grad_lo < grad_hi, "grad_lo", grad_lo, "must be below grad_hi");
  require_nonnegative("activation_saturation", activation_saturation);
  require_fraction("saturation_frac", saturation_frac);
  require_nonnegative("dead_eps", dead_eps);
  require_fraction("dead_frac", dead_frac);
  require_nonnegative("update_ratio_lo", update_ratio_lo);
  require(stagnant_steps >= 1, "stagnant_steps", stagnant_steps, "must be >= 1");
  require_fraction("channel_frac", channel_frac);
  require_fraction("ignored_channel_ratio", ignored_channel_ratio);
  require_fraction("leakage_cka", leakage_cka);
  require(zombie_window >= 1 && zombie_window <= 65535, "zombie_window", zombie_window, "must be in [1, 65535]");
  require_nonnegative("zombie_z", zombie_z);
  require_fraction("zombie_damping", zombie_damping);
  require_nonnegative("zombie_min_exposure", zombie_min_exposure);
  require(zombie_oscillation >= -1 && zombie_oscillation <= 1, "zombie_oscillation",
          zombie_oscillation, "must be in [-1, 1]");
  require_nonnegative("zombie_velocity_ratio", zombie_velocity_ratio);
  require_fraction("velocity_ema", velocity_ema);
  require_fraction("oscillation_ema", oscillation_ema);
  require_fraction("flow_critical_ratio", flow_critical_ratio);
  require_fraction("flow_problems_ratio", flow_problems_ratio);
  require_fraction("flow_minor_ratio", flow_minor_ratio);
  require(flow_minor_ratio <= flow_problems_ratio && flow_problems_ratio <= flow_critical_ratio,
          "flow_problems_ratio", flow_problems_ratio,
          "must lie between flow_minor_ratio and flow_critical_ratio");
}

StatsOptions Thresholds::stats_options(int threads) const {
  StatsOptions o;
  o.dead_eps = dead_eps;
  o.saturation = activation_saturation;
  o.threads = threads;
  return o;
}

}  // namespace gradscope
