// RunSink: where an adapter hands everything it measured, so that a run store keeps all of it
// and a report built from the saved run equals the one built in memory.
//
//   gradscope::RunWriter run("runs/exp1");                  // io: a RunSink
//   gradscope::torch::AuditOptions o;
//   o.sink = &run;                                          // every audited step, as it ends
//   ... train ...
//   audit.finish();                                         // architecture, warnings, grad SNR
//   run.close();
//
// The interface lives in core so that adapters (torch) hand over without linking the run
// store (io); the glue that links both (the demo, the scenarios, the Python module) connects them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradscope/core/attention/rules.h"
#include "gradscope/core/audit/architecture.h"
#include "gradscope/core/audit/channels.h"
#include "gradscope/core/audit/element_histogram.h"
#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/audit/report.h"
#include "gradscope/core/vocabulary/thresholds.h"
#include "gradscope/core/series/rules.h"

namespace gradscope {

/// Everything measured at one step: what ReportBuilder::add takes, in the order it was measured.
struct StepRecords {
  int64_t step = 0;
  std::vector<Record> records;
  std::vector<ChannelRecord> channels;
  std::vector<SimilarityRecord> similarities;
  /// Element histograms at the steps AuditOptions::histogram_every samples (else empty).
  std::vector<ElementHistogram> histograms;
  /// Attention records of the nodes whose attention was measured at this step.
  std::vector<AttentionRecord> attention;
  /// Per-step scalars (the loss, the global gradient norms; core/series), each with its own
  /// step: those of steps the audit did not sample come with the next sampled step.
  std::vector<StepScalar> scalars;
};

/// A per-node value the records do not hold, computed by the adapter from its own state.
struct NodeValue {
  std::string node;
  std::string name;  ///< kGradSnr; names this build does not know are kept, not shown
  double value = 0;
};

/// NodeValue name of NodeReport::grad_snr.
inline constexpr const char* kGradSnr = "grad_snr";
/// NodeValue name of NonFiniteOrigin::rank, on the origin's node (runs merged across ranks).
inline constexpr const char* kNonFiniteRank = "nonfinite_rank";
/// NodeValue names of Report::loss_scale, on node "" (the run): "loss_scale.steps", ...
inline constexpr const char* kLossScalePrefix = "loss_scale.";

/// What an adapter knows of the whole run once it has finished.
struct RunSummary {
  Thresholds thresholds;             ///< the thresholds the adapter judged with
  Architecture architecture;         ///< its nodes in execution order (the report's node order)
  std::vector<std::string> warnings; ///< what the adapter warned about (e.g. a truncated scope)
  std::vector<NodeValue> values;     ///< e.g. each node's gradient SNR
};

/// Receives a run as it is measured. Called from the training thread, steps increasing.
class RunSink {
 public:
  virtual ~RunSink() = default;
  /// One step, complete, once it has ended.
  virtual void add_step(const StepRecords& step) = 0;
  /// The run's summary; a later call replaces an earlier one.
  virtual void set_summary(const RunSummary& summary) = 0;
};

/// The per-node values a report holds that the records do not (NodeReport::grad_snr where set),
/// in report order, then the NaN/Inf origin's rank when known.
std::vector<NodeValue> node_values(const Report& report);

/// Puts `values` back into `report`'s nodes (the inverse of node_values); values of nodes the
/// report lacks, and names this build does not know, are ignored.
void apply_node_values(Report& report, const std::vector<NodeValue>& values);

}  // namespace gradscope
