// The tables of a run database and the rows the writer keeps besides the steps: the metadata
// and the run's summary (architecture, warnings, per-node values). README's "Saved runs" and
// docs/run-store.md describe each table.
#pragma once

#include <string>

#include "gradscope/core/audit/run_sink.h"
#include "store/internal/sqlite_db.h"

namespace gradscope::internal {

/// CREATE TABLE statements of a new run (schema kRunSchemaVersion).
extern const char* const kRunSchema;
/// The tables schemas 5 and 6 add (IF NOT EXISTS): what upgrading an older run creates.
extern const char* const kUpgradeTables;

/// Meta keys that count committed rows, so that a reader notices a lost or added row. A key
/// that is absent counts 0 (a run whose summary was never handed over).
inline constexpr const char* kStepRowsKey = "steps";
inline constexpr const char* kChannelRowsKey = "channel_steps";
inline constexpr const char* kSimilarityRowsKey = "similarity_steps";
inline constexpr const char* kHistogramRowsKey = "histogram_steps";  // schema 4
inline constexpr const char* kAttentionRowsKey = "attention_steps";  // schema 6
inline constexpr const char* kScalarRowsKey = "scalar_steps";  // schema 7
inline constexpr const char* kArchitectureRowsKey = "architecture_rows";
inline constexpr const char* kWarningRowsKey = "warning_rows";
inline constexpr const char* kValueRowsKey = "value_rows";
inline constexpr const char* kDocumentRowsKey = "document_rows";          // schema 5
inline constexpr const char* kInterventionRowsKey = "intervention_rows";  // schema 5
/// The committed documents' names, comma-separated in name order (document_rows.h): with it a
/// reader says which document was lost, not only that one was. Runs of schema 5 written before
/// it have the count alone.
inline constexpr const char* kDocumentNamesKey = "document_names";  // schema 5

/// INSERT OR REPLACE of one meta row (key, value, checksum).
inline constexpr const char* kPutMeta = "INSERT OR REPLACE INTO meta(key, value, checksum) VALUES(?, ?, ?)";
/// Runs `put` (prepared from kPutMeta) for one key.
void put_meta(Statement& put, const std::string& key, const std::string& value);
void put_meta(Database& db, const std::string& key, const std::string& value);

/// Replaces the summary's rows, its row counts and the thresholds in meta, inside the caller's
/// transaction.
void write_summary(Database& db, const RunSummary& summary);

/// What a node value's checksum covers: the value exactly (C's %a), "nan" for any NaN (stored
/// as NULL, so its bits do not survive).
std::string value_text(double value);

}  // namespace gradscope::internal
