// Embedding results saved beside a run's run.db, so commands over saved runs (gradscope html,
// report) can show them: <run dir>/embedding.json.
//
//   gradscope::EmbeddingRunSummary s;
//   for (auto& table : hub_report.tables)
//     s.tables.push_back({table, gradscope::profile_embedding(table.layer, tracker.rows())});
//   s.correlations = hub_report.correlations;
//   gradscope::save_embedding_summary("runs/mf", s);
//   std::optional<gradscope::EmbeddingRunSummary> back = gradscope::load_embedding_summary("runs/mf");
//
// Format: {"gradscope_embedding_run": {"version": 1, "tables": [{"report": {...as
// render_embedding_json's inner object}, "profile": {...}}], "gradient_norm_correlations":
// [...]}}. Non-finite numbers are written as null and read back as NaN.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/embedding_profile.h"
#include "gradscope/core/embedding_report.h"

namespace gradscope {

struct EmbeddingTableSummary {
  EmbeddingReport report;
  EmbeddingProfile profile;
};

struct EmbeddingRunSummary {
  std::vector<EmbeddingTableSummary> tables;
  std::vector<TowerCorrelation> correlations;
};

/// Writes <dir>/embedding.json atomically (temporary file, then rename). `dir` is a run
/// directory; it is created if missing. Throws Error naming the path on failure.
void save_embedding_summary(const std::string& dir, const EmbeddingRunSummary& summary);

/// Reads <dir>/embedding.json (`dir` may also be the run's run.db: its folder is used).
/// nullopt when the file does not exist; Error naming the file when it is malformed or from
/// a newer version. Round trip: load(save(s)) == s, NaN for NaN.
std::optional<EmbeddingRunSummary> load_embedding_summary(const std::string& dir);

}  // namespace gradscope
