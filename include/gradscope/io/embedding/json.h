// Embedding reports as JSON for coding agents, and the auto-fix audit log (audit.jsonl).
//
//   std::cout << gradscope::render_embedding_json(tracker.report());
//   // {"gradscope_embedding_report": {"layer": "item_emb", "embedding_stats": {...},
//   //   "diagnostics": [{"type", "premise", "implies", "action", "expected_effect",
//   //                    "confidence", "evidence"}]}}
//   gradscope::AuditLog log("runs/exp1");            // appends to runs/exp1/audit.jsonl
//   options.on_intervention = [&](const auto& iv) { log.append(iv); };
//
// Non-finite numbers become null.
#pragma once

#include <fstream>
#include <mutex>
#include <string>

#include "gradscope/core/embedding/report.h"

namespace gradscope {

/// {"gradscope_embedding_report": {...}}; `indent` < 0 gives one line.
std::string render_embedding_json(const EmbeddingReport& report, int indent = 2);

/// {"gradscope_embedding_hub": {"tables": [reports], "gradient_norm_correlations": [...]}}.
std::string render_embedding_hub_json(const EmbeddingHubReport& report, int indent = 2);

/// One intervention as one JSON line (no newline): time, step, layer, type, rows_affected,
/// scale {min, mean, max}, snr_median, sample_rows.
std::string intervention_json(const EmbeddingIntervention& intervention);

/// Appends interventions, one JSON line each, to the run in `dir`: into its run.db's auto-fix
/// log when the folder holds a run (io/store/run_documents.h; create the RunWriter first), else
/// to <dir>/audit.jsonl, flushed per line.
class AuditLog {
 public:
  /// Opens (creating `dir` if needed) for appending; throws Error naming the path on failure.
  explicit AuditLog(const std::string& dir);
  /// Writes one line, committed before it returns; thread-safe. Throws Error when the write
  /// fails.
  void append(const EmbeddingIntervention& intervention);
  /// The run's run.db, or audit.jsonl.
  const std::string& path() const { return path_; }

 private:
  std::string dir_, path_;
  bool in_run_ = false;
  std::ofstream out_;
  std::mutex mu_;
};

}  // namespace gradscope
