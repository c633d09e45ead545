// Report: one model of the findings per node, aggregated over steps. Renderers (io/) show it;
// they never recompute it.
//
//   gradscope::Report r = gradscope::build_report(records);     // rules.h
//   for (const auto& n : r.nodes) std::cout << n.node << " " << n.flags.join() << "\n";
//   gradscope::assert_healthy(r);    // throws HealthError naming flagged nodes, worst first
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gradscope/core/error.h"
#include "gradscope/core/vocabulary/flags.h"
#include "gradscope/core/audit/loss_scale.h"
#include "gradscope/core/vocabulary/thresholds.h"
#include "gradscope/core/series/rules.h"

namespace gradscope {

/// Findings for one node. Measures a node never had are NaN (rendered "-" or null).
struct NodeReport {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

  std::string node;
  int64_t steps = 0;        ///< distinct steps with at least one record
  int64_t first_step = -1;
  int64_t last_step = -1;
  double act_mean_abs = kNone;      ///< mean |x| of activations over all steps
  double act_std = kNone;           ///< std of activations over all steps
  double out_grad_l2 = kNone;       ///< mean over steps of the output-gradient L2
  double param_grad_l2 = kNone;     ///< mean over steps of the parameter-gradient L2
  double param_l2 = kNone;          ///< mean over steps of the parameter L2
  double grad_param_ratio = kNone;  ///< param_grad_l2 / param_l2
  double update_ratio = kNone;      ///< mean over steps of ||delta theta|| / ||theta||
  double grad_snr = kNone;          ///< gradient signal-to-noise, set by adapters that measure it
  double effective_rank = kNone;    ///< mean over sampled steps (channel view)
  int64_t channels = 0;             ///< channels seen by the channel view (0: not enabled)
  int64_t dead_channels = 0;
  int64_t ignored_channels = 0;
  int64_t nonfinite_steps = 0;      ///< steps whose values at some site were all NaN or Inf,
                                    ///< left out of that site's means (most over the sites)
  int64_t nan = 0;                  ///< NaN elements seen at any site
  int64_t inf = 0;                  ///< +-Inf elements seen at any site
  FlagSet flags;
  std::vector<Evidence> evidence;   ///< one entry per flag other than HEALTHY

  /// Adds the flag of `e` with its evidence, unless the node already has a flag it yields to
  /// (FlagInfo::yields_to); removes a flag raised before that yields to it, and HEALTHY. Every
  /// rule raises through it. Returns whether the flag was raised.
  bool raise(Evidence e);
  /// Severity of the worst flag (see flag_severity).
  int severity() const;
  /// Flags joined by `sep`, with counts where a flag has one: "DEAD_CHANNELS(3),SATURATED".
  std::string flags_label(const char* sep = ",") const;
};

/// Where non-finite values first appeared: the first audited step with any NaN or Inf, and
/// the first node in execution order (forward) or the node where backward created them.
struct NonFiniteOrigin {
  int64_t step = -1;  ///< -1: no NaN or Inf anywhere
  std::string node;
  std::string phase;  ///< "forward" or "backward"
  Site site = Site::kActivation;
  int64_t rank = -1;  ///< many processes: the lowest rank that saw them there; -1: one process
  bool found() const { return step >= 0; }
};

/// All nodes in first-seen order, plus the thresholds that judged them.
struct Report {
  Thresholds thresholds;
  int64_t steps = 0;  ///< distinct steps over all nodes
  std::vector<NodeReport> nodes;  ///< in declaration order, then first-seen order
  NonFiniteOrigin nonfinite_origin;
  /// Mixed precision: steps skipped on overflow and how the loss scale moved (set by the
  /// adapter that knew the scale, and read back from a saved run's summary).
  LossScaleReport loss_scale;
  /// The per-step series (loss, global gradient norms): LOSS_SPIKE, DIVERGENCE and the nodes
  /// whose gradient moved first (core/series/rules.h).
  SeriesReport series;

  /// True when every node is HEALTHY, the loss neither spiked nor diverged and the loss
  /// scale's verdict is not a warning.
  bool healthy() const;
  /// Flagged nodes, worst first (severity, then earliest first step, then the node where
  /// NaN/Inf started, then report order).
  std::vector<const NodeReport*> flagged_worst_first() const;
  /// The nodes a verdict counts, in report order: every node that is not a submodule of
  /// another node in the report ("encoder", not "encoder/fc1"), since a submodule's flags roll
  /// up into its node. So a model reads "2 of 9 nodes" whichever submodules a scope recorded.
  std::vector<const NodeReport*> verdict_nodes() const;
};

/// Throws HealthError naming every flagged node, worst first, with its flags.
void assert_healthy(const Report& report);

}  // namespace gradscope
