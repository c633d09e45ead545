#include "store/internal/document_rows.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "gradscope/core/error.h"
#include "gradscope/io/store/run_metadata.h"
#include "internal/side_file.h"
#include "store/internal/record_codec.h"
#include "store/internal/run_schema.h"

namespace gradscope::internal {

namespace fs = std::filesystem;

namespace {

// Creates the tables of schemas 5 and 6 and moves meta and the header to the newest, in the caller's
// transaction; refuses what cannot be upgraded.
void upgrade_to_documents(Database& db, int64_t version) {
  if (version > kRunSchemaVersion)
    throw Error("run database '" + db.path() + "': schema version " + std::to_string(version) +
                " is newer than this gradscope writes (" + std::to_string(kRunSchemaVersion) + "); upgrade gradscope");
  if (version < 1) throw Error("run database '" + db.path() + "': not a gradscope run (no schema version)");
  if (version < 2)
    throw Error("run database '" + db.path() + "': schema version " + std::to_string(version) +
                " has no checksummed metadata to upgrade; record the run again to keep documents in it");
  if (version == kRunSchemaVersion) return;
  db.exec(kUpgradeTables);
  put_meta(db, "schema_version", std::to_string(kRunSchemaVersion));
  db.exec(("PRAGMA user_version=" + std::to_string(kRunSchemaVersion)).c_str());
}

std::vector<std::string> held_documents(Database& db) {
  std::vector<std::string> names;
  Statement s = db.prepare("SELECT name FROM documents ORDER BY name");
  while (s.step()) names.push_back(s.column_text(0));
  return names;
}

// The names document_names keeps: a document's name never holds a comma (run_document_names).
std::string join_names(const std::vector<std::string>& names) {
  std::string joined;
  for (const std::string& name : names) joined += (joined.empty() ? "" : ",") + name;
  return joined;
}

std::vector<std::string> split_names(const std::string& joined) {
  std::vector<std::string> names;
  std::size_t start = 0;
  while (start < joined.size()) {
    std::size_t end = joined.find(',', start);
    if (end == std::string::npos) end = joined.size();
    names.push_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return names;
}

// The value of the meta row `key`, its checksum verified; nullopt when there is none.
std::optional<std::string> verified_meta(Database& db, const char* key) {
  Statement s = db.prepare("SELECT value, checksum FROM meta WHERE key = ?");
  s.bind(1, std::string_view(key));
  if (!s.step()) return std::nullopt;
  std::string value = s.column_text(0);
  if (row_checksum({key, value}) != s.column_int(1))
    throw Error("run database '" + db.path() + "': table meta, key '" + key + "': damaged (checksum mismatch)");
  return value;
}

bool holds(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::string stored_document_where(const std::string& db, const std::string& name) {
  return "run database '" + db + "', document '" + name + "'";
}

int64_t write_upgraded(const std::string& run, const std::string& what,
                       const std::function<void(Database& db, int64_t version)>& body) {
  const std::string path = run_database(run);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw Error("run database '" + path + "': no such file, so nowhere to keep " + what +
                " (write the run first: a RunWriter, or an Audit with a run)");
  Database db(path, OpenMode::kReadWrite);
  // No page reaches the log before the commit: SQLite rewrites a spilled page's frame in place
  // when the transaction changes it again, and fixes the checksums only at commit, so a writer
  // killed mid-transaction (a large rows.json, a whole upgrade) would leave frames that fail
  // their checksum, which the reader must call damage (RunReader::check_log).
  db.exec("PRAGMA cache_spill=OFF");
  // IMMEDIATE: the write lock now, so the version read below is the one this transaction
  // upgrades (another process may upgrade the same run at the same time).
  db.exec("BEGIN IMMEDIATE");
  try {
    const int64_t version = db.query_int("PRAGMA user_version");
    upgrade_to_documents(db, version);
    body(db, version);
    db.exec("COMMIT");
    return version;
  } catch (...) {
    sqlite3_exec(db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void put_document_row(Database& db, const std::string& name, const std::string& text) {
  // A new count over a table that lost a row would bless the loss: refused, named.
  check_committed_documents(db);
  Statement put = db.prepare("INSERT OR REPLACE INTO documents(name, body, checksum) VALUES(?, ?, ?)");
  put.bind(1, name);
  put.bind(2, text);
  put.bind(3, row_checksum({name, text}));
  put.step();
  const std::vector<std::string> names = held_documents(db);
  put_meta(db, kDocumentRowsKey, std::to_string(names.size()));
  put_meta(db, kDocumentNamesKey, join_names(names));
}

void append_log_rows(Database& db, const std::vector<std::string>& lines) {
  int64_t position = db.query_int("SELECT count(*) FROM interventions");
  Statement put = db.prepare("INSERT INTO interventions(position, line, checksum) VALUES(?, ?, ?)");
  for (const std::string& line : lines) {
    put.reset();
    put.bind(1, position);
    put.bind(2, line);
    put.bind(3, row_checksum({std::to_string(position), line}));
    put.step();
    ++position;
  }
  put_meta(db, kInterventionRowsKey, std::to_string(position));
}

void check_committed_documents(Database& db) {
  const std::vector<std::string> held = held_documents(db);
  if (const std::optional<std::string> joined = verified_meta(db, kDocumentNamesKey)) {
    const std::vector<std::string> committed = split_names(*joined);
    for (const std::string& name : committed)
      if (!holds(held, name))
        throw Error(stored_document_where(db.path(), name) +
                    ": missing (meta says it was committed; table documents does not hold it)");
    for (const std::string& name : held)
      if (!holds(committed, name))
        throw Error(stored_document_where(db.path(), name) +
                    ": not committed (table documents holds it; meta does not list it)");
  }
  // A run of schema 5 from before document_names: the count alone (absent: none committed).
  const std::string count = verified_meta(db, kDocumentRowsKey).value_or("0");
  if (count != std::to_string(held.size()))
    throw Error("run database '" + db.path() + "': documents: meta says " + count + " committed, the table has " +
                std::to_string(held.size()));
}

}  // namespace gradscope::internal
