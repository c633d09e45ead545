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

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/embedding/profile.h"
#include "gradscope/core/embedding/report.h"

namespace gradscope {

/// The largest embedding.json read: 8 MiB. A summary takes about 11 KB a table whatever the
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

/// Writes <dir>/embedding.json atomically (temporary file, then rename). `dir` is a run
/// directory; it is created if missing. Throws Error naming the path on failure, and naming
/// the field for a summary load_embedding_summary would refuse (nothing is written then).
void save_embedding_summary(const std::string& dir, const EmbeddingRunSummary& summary);

/// Reads <dir>/embedding.json (`dir` may also be the run's run.db: its folder is used).
/// nullopt when the file does not exist. Only a regular file (or a link to one) of at most
/// kMaxEmbeddingFileBytes is read, and every field is checked: counts are exact integers in
/// [0, 2^63), fractions lie in [0, 1], histogram edges bound their bins in ascending order,
/// Lorenz points rise within [0, 1]. Anything else, and a newer version, is an Error
/// "embedding file '<path>': <field>: <what>". Round trip: load(save(s)) == s, NaN for NaN.
std::optional<EmbeddingRunSummary> load_embedding_summary(const std::string& dir);

}  // namespace gradscope
