// The per-step tests of the rules: what one step's statistics cross. ReportBuilder (rules.h)
// judges every step with them before it aggregates; TensorBoard's per-step flags and the
// gradient-flow timeline call the same functions, so a step is flagged there exactly when the
// report's evidence would count it.
//
//   gradscope::SiteCrossings c = gradscope::site_crossings(grad_stats, thresholds);
//   if (c.below_grad_lo) ...                    // this step's gradient L2 < grad_lo
//   gradscope::StagnantRun run;                  // per node, across steps
//   if (auto r = gradscope::update_ratio(param, update)) stagnant = run.add(*r, thresholds);
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "gradscope/core/vocabulary/flags.h"
#include "gradscope/core/vocabulary/thresholds.h"
#include "gradscope/core/stats/stats.h"

namespace gradscope {

/// What one step's merged statistics at one site cross.
struct SiteCrossings {
  bool nan = false, inf = false;  ///< some element was NaN / +-Inf
  /// The gradient thresholds on the L2 of the finite values (what a gradient site is judged
  /// on); a step with no finite value crosses neither.
  bool below_grad_lo = false, above_grad_hi = false;
  bool dead = false;       ///< zero fraction > dead_frac
  bool saturated = false;  ///< saturated fraction > saturation_frac
  bool nonfinite() const { return nan || inf; }
};
SiteCrossings site_crossings(const Stats& s, const Thresholds& t);

/// ||update|| / ||param|| of one step, when both were recorded, neither holds a NaN or Inf (the
/// L2 of a finite part would read as a small update: a run that blew up is not also stagnant)
/// and the parameter's L2 is above 0.
std::optional<double> update_ratio(const Stats& param, const Stats& update);

/// Consecutive steps with an update ratio below update_ratio_lo: STAGNANT once it lasts
/// stagnant_steps steps.
struct StagnantRun {
  int64_t length = 0;
  /// Adds one step's ratio; true when the run is long enough to be STAGNANT.
  bool add(double ratio, const Thresholds& t) {
    length = ratio < t.update_ratio_lo ? length + 1 : 0;
    return length >= t.stagnant_steps;
  }
};

/// One node's records of one step, merged per site.
struct NodeStep {
  std::array<Stats, kSiteCount> sites{};
  std::array<bool, kSiteCount> has{};
  void add(Site site, const Stats& s);
  const Stats* get(Site s) const {
    return has[static_cast<std::size_t>(s)] ? &sites[static_cast<std::size_t>(s)] : nullptr;
  }
  /// The gradient the step is judged on: the first of kGradientSites recorded (nullptr: none).
  const Stats* gradient(Site* site = nullptr) const;
};

/// The flags whose per-step test this step passes, for the node whose STAGNANT run is `run`
/// (updated): VANISHING / EXPLODING (its gradient's L2), DEAD (activation zero fraction),
/// SATURATED (activation or pre-activation), STAGNANT (the run), NAN and INF (any site).
/// `tested` gets the flags the step had the records to test.
FlagSet step_flags(const NodeStep& step, StagnantRun& run, const Thresholds& t, FlagSet* tested = nullptr);

}  // namespace gradscope
