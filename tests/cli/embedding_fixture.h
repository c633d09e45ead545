// An embedding table with one planted ZOMBIE_ROWS finding, as a tracker saves it into a run:
// what the report and editor tests put beside a run's records.
#pragma once

#include "gradscope/io/embedding/store.h"

namespace gradscope::test {

/// Table "item" of 40 rows whose only finding is ZOMBIE_ROWS ("8 of 30 exposed rows
/// oscillate") at `confidence`.
inline EmbeddingRunSummary zombie_table_summary(double confidence) {
  EmbeddingRunSummary summary;
  EmbeddingTableSummary table;
  table.report.layer = "item";
  table.report.stats.num_embeddings = 40;
  EmbeddingDiagnostic zombie;
  zombie.type = "ZOMBIE_ROWS";
  zombie.premise = "8 of 30 exposed rows oscillate";
  zombie.action = "LOWER_EMBEDDING_LR_OR_ENABLE_AUTO_FIX";
  zombie.advice = "Lower this table's learning rate.";
  zombie.confidence = confidence;
  table.report.diagnostics = {zombie};
  summary.tables = {table};
  return summary;
}

}  // namespace gradscope::test
