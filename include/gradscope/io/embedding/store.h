// Embedding results saved with a run, so commands over saved runs (gradscope report, html, ls,
// diff, lsp) can show them: the run's embedding.json document, inside its run.db
// (io/store/run_documents.h; beside it in runs before schema 5).
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

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/embedding/profile.h"
#include "gradscope/core/embedding/report.h"

namespace gradscope {

/// The largest embedding.json document read: 8 MiB. A summary takes about 11 KB a table whatever the
/// table's rows (20 bins a histogram, at most 101 Lorenz points, 10 example rows a finding), so
/// this holds some 700 tables, while a hostile file of millions of numbers costs seconds and a
/// few hundred MB, not more.
constexpr std::uintmax_t kMaxEmbeddingFileBytes = 8u << 20;

struct EmbeddingTableSummary {
  EmbeddingReport report;
  EmbeddingProfile profile;
};

struct EmbeddingRunSummary {
  std::vector<EmbeddingTableSummary> tables;
  std::vector<TowerCorrelation> correlations;
};

/// Writes the run's embedding.json document: into `dir`'s run.db when there is one (`dir` is a
/// run directory or its run.db), else as the file <dir>/embedding.json (a temporary file, then
/// rename; `dir` created if missing). Throws Error naming the database or file on failure, and
/// naming the field for a summary load_embedding_summary would refuse (nothing is written then).
void save_embedding_summary(const std::string& dir, const EmbeddingRunSummary& summary);

/// Reads the run's embedding.json document (from run.db, else the file beside it; `dir` may
/// also be the run's run.db). nullopt when there is none. Only a document, or a regular file
/// (or a link to one), of at most kMaxEmbeddingFileBytes is read, and every field is checked: counts are exact integers in
/// [0, 2^63), fractions lie in [0, 1], histogram edges bound their bins in ascending order,
/// Lorenz points rise within [0, 1]. Anything else, and a newer version, is an Error
/// "run database '<path>', document 'embedding.json': <field>: <what>" (for a side file
/// "embedding file '<path>': ..."). Round trip: load(save(s)) == s, NaN for NaN.
std::optional<EmbeddingRunSummary> load_embedding_summary(const std::string& dir);

}  // namespace gradscope
