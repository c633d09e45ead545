// The rows of schema 5's documents and interventions tables and the meta keys that commit them
// (document_rows, document_names, intervention_rows): written inside a caller's transaction, and
// checked by readers against the table, so the format of each key is declared in one place.
//
//   internal::write_upgraded(run, "trees.json", [&](internal::Database& db, int64_t) {
//     internal::put_document_row(db, "trees.json", text);
//   });
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "store/internal/sqlite_db.h"

namespace gradscope::internal {

/// How errors name a document in run.db: "run database '<db>', document '<name>'".
std::string stored_document_where(const std::string& db, const std::string& name);

/// Runs `body` on `run`'s database in one write transaction (BEGIN IMMEDIATE) after upgrading a
/// run of schema 2 to 4 to schema 5 in it; `body` gets the version the run had when the
/// transaction began. Commits when `body` returns, rolls back when it throws; returns that
/// version. Throws Error naming the database: no run.db (`what` says what had nowhere to go),
/// a version that cannot be upgraded, a failed write.
int64_t write_upgraded(const std::string& run, const std::string& what,
                       const std::function<void(Database& db, int64_t version)>& body);

/// Inserts or replaces the document `name` and updates document_rows and document_names.
/// Refuses (check_committed_documents) a table that already contradicts them.
void put_document_row(Database& db, const std::string& name, const std::string& text);

/// Appends `lines` to table interventions and updates intervention_rows.
void append_log_rows(Database& db, const std::vector<std::string>& lines);

/// Checks table documents against the committed names (document_names) and count
/// (document_rows), in the caller's read transaction: throws Error naming the database and the
/// document lost or added ("run database '<db>', document 'embedding.json': lost ..."); for a
/// run without document_names, naming the counts.
void check_committed_documents(Database& db);

}  // namespace gradscope::internal
