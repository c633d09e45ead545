// A run's documents: its analyses besides the records, kept inside run.db so that the database
// alone is the whole run (copy run.db and `gradscope report` says the same). Each is one JSON
// document under the name of the file runs before schema 5 kept beside run.db:
//
//   embedding.json     the embedding tables' summaries and findings (io/embedding/store.h)
//   trees.json         a boosted model's round dynamics and findings (io/trees/store.h)
//   units.json         the compression rule's per-unit profile (io/compress/json.h)
//   rows.json          the row rule's per-row profile of embedding tables (io/compress/rows_json.h)
//   compression.json   measured compression points (io/compress/json.h)
//
// and the auto-fix log: one JSON line per act of an embedding tracker's auto-fix
// (gradscope::AuditLog, io/embedding/json.h), what audit.jsonl beside run.db held.
//
//   gradscope::put_run_document("runs/mf", "embedding.json", text);   // replaces it
//   std::optional<gradscope::RunDocument> d = gradscope::read_run_document("runs/mf", "embedding.json", 8 << 20);
//
// The typed savers and loaders of those headers call these; a reader of a run from before
// schema 5 gets the side file instead, so old runs read as they did. Writing a document into
// a run of schema 2 to 4 upgrades it to schema 5 first (one transaction: the table, the meta
// key and the header's version); io/store/run_upgrade.h moves every side file in with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gradscope {

/// The documents a run may hold, by name (the list above, in that order).
const std::vector<std::string>& run_document_names();

/// The largest document any loader reads (rows.json's limit, io/compress/rows_json.h): what
/// export and upgrade read.
inline constexpr std::uintmax_t kMaxRunDocumentBytes = std::uintmax_t{1} << 30;

/// One document and where it was read from.
struct RunDocument {
  std::string text;
  /// For messages: "run database '<dir>/run.db', document 'embedding.json'", or for a side
  /// file "<kind> file '<dir>/embedding.json'" (kind as read_run_document was given it).
  std::string where;
  bool in_database = false;
};

/// Stores `text` as the document `name` of the run `run` (a run directory or its run.db),
/// replacing one of that name, in one transaction with the committed documents' count and
/// names (meta). Upgrades a run of schema 2 to 4 to schema 5 first. Also works while the run's
/// writer is open (SQLite serialises the two). Throws Error naming the database: no run there
/// (write the run first), a name not in run_document_names(), a schema 1 run or a newer one, a
/// table that already lost or gained a document (as read_run_document), a failed write.
void put_run_document(const std::string& run, const std::string& name, const std::string& text);

/// The document `name` of `run`: from run.db; for a run before schema 5 (or a folder holding
/// only such files, no run.db) from the file of that name beside it; nullopt when there is
/// none. A file beside a schema-5 run.db is never read: it is left from an older run in the
/// same folder (a rerun with overwrite replaces run.db, not the files beside it). Only a regular side file is read, and neither may exceed `max_bytes`.
/// Never writes. Throws Error starting with RunDocument::where: damaged (checksum mismatch),
/// larger than the limit, not a regular file, unreadable; and, found or not, Error naming the
/// database and the document when run.db lost a document meta says was committed (or holds one
/// it does not list); a run without the names, the counts. `kind` names a side file in messages
/// ("embedding" gives "embedding file '...'").
std::optional<RunDocument> read_run_document(const std::string& run, const std::string& name,
                                             std::uintmax_t max_bytes, const std::string& kind = "");

/// Appends `lines` (one JSON object each, no newline: gradscope::intervention_json) to the run's
/// auto-fix log (table interventions), in one transaction with their count; also while the
/// run's writer is open. Upgrades a run of schema 2 to 4 first. Throws Error as
/// put_run_document, and for a line holding a newline.
void append_run_log(const std::string& run, const std::vector<std::string>& lines);

/// The run's auto-fix log, in order: from run.db (schema 5), else (older runs, or no run.db)
/// the lines of the file audit.jsonl beside it (at most `max_bytes`); empty when there is
/// neither. A damaged line or
/// a count that contradicts meta is an Error naming the table and position.
std::vector<std::string> read_run_log(const std::string& run, std::uintmax_t max_bytes = std::uintmax_t{64} << 20);

/// Moves `run` (schema 2 to 4) to schema 5 in one transaction, documents none yet; returns the
/// version it had. A run of schema 5 is left as it is. Throws Error as put_run_document.
int64_t upgrade_run(const std::string& run);

/// Writes every document `run` has (in run.db or beside it) as a file of its name into the
/// folder `dir` (created if missing; a file there is replaced whole), and its auto-fix log as
/// audit.jsonl when it has one; returns the names of the files written.
/// Throws Error naming the document or the file that failed: a lost or damaged document as
/// read_run_document says.
std::vector<std::string> export_run_documents(const std::string& run, const std::string& dir);

/// The documents run.db holds (not the side files), by name. Throws Error as read_run_document
/// when the table contradicts the committed names or count.
std::vector<std::string> stored_run_documents(const std::string& run);

}  // namespace gradscope
