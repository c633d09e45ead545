// Findings: every verdict of a run (module flags, gradient-flow health, embedding findings,
// tree findings) in one agent-shaped form, with the guidance texts (what it implies, what to
// do, what should change) kept here once, so the JSON and the HTML report say the same.
//
//   std::vector<gradscope::Finding> all = gradscope::module_findings(report);
//   if (auto f = gradscope::flow_finding(flow, report.thresholds)) all.push_back(*f);
//   for (const auto& f : all)
//     std::cout << f.type << " " << f.node << ": " << f.premise << "; " << f.action << "\n";
//
// Every number in a premise is a measured value held by the report (Evidence::value, a count,
// a step), written in the shortest form that reads back to the same double. docs/agent-json.md
// has the schema and the confidence mapping.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/findings/kinds.h"
#include "gradscope/core/vocabulary/numbers.h"
#include "gradscope/core/embedding/report.h"
#include "gradscope/core/vocabulary/flags.h"
#include "gradscope/core/audit/report.h"
#include "gradscope/core/audit/timeline.h"
#include "gradscope/core/trees/dynamics.h"

namespace gradscope {

/// How much a finding can be trusted; docs/agent-json.md has the mapping.
enum class Confidence : uint8_t { kLow, kMedium, kHigh };

/// "low", "medium", "high".
const char* confidence_name(Confidence c);

/// One measured number behind a finding: its name, value and (when it was compared with one)
/// the threshold. Non-finite values are data (a NaN mean, an Inf norm), not errors.
struct FindingMeasure {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string name;
  double value = kNone;
  double threshold = kNone;  ///< NaN: not compared with a threshold
  std::string comparison;    ///< "<", ">", "" when not compared
};

/// One finding in the shape coding agents read.
struct Finding {
  FindingKind kind = FindingKind::kModule;  ///< its name (finding_kind_name) in every output
  std::string type;         ///< VANISHING, GRADIENT_FLOW, ZOMBIE_ROWS, OVERFITTING, ...
  std::string node;         ///< node, embedding table or "trees"; "" for the whole model (flow)
  int64_t since_step = -1;  ///< step (round for trees) where it begins; -1: unknown
  std::string premise;      ///< what was measured, with the measured numbers
  std::string implies, action, expected_effect;
  std::string action_code;  ///< embedding findings' code for programs; "" otherwise
  Confidence confidence = Confidence::kLow;
  std::vector<FindingMeasure> evidence;
};

/// The guidance for `flag` (empty strings for HEALTHY), its row in kFlags: what it means,
/// what to try first and what should change if it worked. Standard remedies, not measured
/// claims; the evidence says why the flag was raised. flag_advice(flag) is its action.
const FlagGuidance& flag_guidance(Flag flag);

/// The guidance of NAN and INF by where the values were born (NonFiniteOrigin::phase:
/// "forward", "backward" or "optimizer"); flag_guidance(flag) for other flags and phases.
const FlagGuidance& nonfinite_guidance(Flag flag, const std::string& phase);

/// The guidance of LOSS_SCALE_OVERFLOW, informational (skips while the scale calibrates) or a
/// warning (LossScaleReport::Verdict).
const FlagGuidance& loss_scale_guidance(bool warning);

/// LOSS_SCALE_OVERFLOW (kind "loss_scale", node "") when a loss scaler skipped any step; its
/// premise says whether it is informational or a warning, with the counts and the scales.
std::optional<Finding> loss_scale_finding(const LossScaleReport& loss_scale);

/// LOSS_SPIKE and DIVERGENCE (kind "loss", node ""): the divergence first, then the first of
/// the spikes with their count; each names the nodes whose gradient burst first and says how to
/// clip with the measured norms before clipping. Empty when the loss neither spiked nor
/// diverged (or was never recorded).
std::vector<Finding> series_findings(const SeriesReport& series, const Thresholds& thresholds);

/// One line for the verdict: "DIVERGENCE at step 3 (loss ...); gradients burst first in rnn at
/// step 2", "LOSS_SPIKE at step 100 (...)", else "LOSS_OUT_OF_RANGE at step 12 (loss -1e+200)",
/// or "" when none.
std::string series_headline(const SeriesReport& series);

/// Confidence of a module flag from its evidence: how far the value is past the threshold
/// (orders of magnitude for gradient and update ratios, share of the remaining range for
/// fractions) and how many steps the node has.
Confidence module_confidence(const Evidence& evidence, const NodeReport& node,
                             const Thresholds& thresholds);

/// One finding per flag of every node, nodes worst first (Report::flagged_worst_first).
std::vector<Finding> module_findings(const Report& report);

/// The gradient-flow health as a finding; nullopt when healthy.
std::optional<Finding> flow_finding(const FlowSummary& flow, const Thresholds& thresholds);

/// An embedding table's findings in this schema (score 0..1 -> level; kept in the evidence).
std::vector<Finding> embedding_findings(const EmbeddingReport& table);

/// The tree rules' findings in this schema.
std::vector<Finding> tree_findings(const TreeDynamicsReport& report);

}  // namespace gradscope
