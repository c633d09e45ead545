// What `gradscope report` shows for a saved run: who made it, the node table, and the
// gradient-flow health with its recommendations; as text or as one JSON document.
//
//   std::cout << gradscope::render_run_header(meta, path)
//             << gradscope::render_table(report)
//             << gradscope::render_flow_summary(flow);
//   std::cout << gradscope::render_run_json(meta, report, flow);
#pragma once

#include <string>

#include "gradscope/core/audit/report.h"
#include "gradscope/core/audit/run_sink.h"
#include "gradscope/core/audit/timeline.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/store/read_damage.h"
#include "gradscope/io/store/run_metadata.h"
#include "gradscope/io/trees/store.h"

namespace gradscope {

/// "run <path>: <name>, started ..., host ..., gradscope ..." and the command line, each field
/// escaped by terminal_text.
std::string render_run_header(const RunMetadata& meta, const std::string& path);

/// "gradient flow: <health> (...)" and one indented line per recommendation.
std::string render_flow_summary(const FlowSummary& flow);

/// {"run": {...metadata}, "gradscope_report": {...as render_json}, "gradient_flow": {...}}, and
/// with `embedding`, "embedding": {"tables": [...as render_embedding_json's inner object],
/// "gradient_norm_correlations": [...]}; with `trees`, "trees": {...trees.json's body}; with
/// `summary` (what the audit saved with the run), "architecture": {"nodes": [...as
/// render_architecture_json]} when it has nodes, and "warnings": [...the audit's warnings]; with
/// `damage` (what a partial read left out), "damaged": true or false and "damage": [{"part",
/// "what"}...], so that a report of a damaged run says so and which tables lost what; last
/// "findings_version" and "findings": every finding in one schema (findings_json.h).
std::string render_run_json(const RunMetadata& meta, const Report& report, const FlowSummary& flow,
                            const EmbeddingRunSummary* embedding = nullptr,
                            const TreeRunSummary* trees = nullptr, const RunSummary* summary = nullptr,
                            const std::vector<ReadDamage>* damage = nullptr);

/// "embedding tables:" and per table "  item (6170 rows, 100.0% exposed, lookup Gini 0.52,
/// per step 0.25): 1 finding", each finding's type, premise and what to do beneath.
std::string render_embedding_findings(const EmbeddingRunSummary& embedding);

/// "; embedding: item [ZOMBIE_ROWS]" naming each table with findings (escaped by
/// terminal_text); "" when none has one.
std::string embedding_verdict(const EmbeddingRunSummary* embedding);

/// The run's one verdict line, agreeing with run_unhealthy: "verdict: unhealthy: ..." naming
/// the worst node, else the gradient flow, else the embedding tables and tree findings; or
/// "verdict: healthy (N nodes, M steps)" and, with `embedding`, "; embedding: no findings",
/// with `trees`, "; trees: no findings".
std::string render_run_verdict(const Report& report, const FlowSummary& flow,
                               const EmbeddingRunSummary* embedding = nullptr,
                               const TreeRunSummary* trees = nullptr);

/// A run is unhealthy when a rule flags a node or the flow health is ProblemsDetected or
/// worse (a few vanishing frames alone, MinorIssues, do not fail a CI job), or when an
/// embedding table or the trees have a finding.
bool run_unhealthy(const Report& report, const FlowSummary& flow,
                   const EmbeddingRunSummary* embedding = nullptr,
                   const TreeRunSummary* trees = nullptr);

}  // namespace gradscope
