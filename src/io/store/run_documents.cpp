// A run's documents (schema 5): the table documents in run.db, its upgrade from older schemas,
// and the side files older runs kept instead.
#include "gradscope/io/store/run_documents.h"

#include <algorithm>
#include <filesystem>

#include "gradscope/core/error.h"
#include "gradscope/io/store/run_reader.h"
#include "internal/regular_file.h"
#include "internal/side_file.h"
#include "store/internal/document_rows.h"
#include "store/internal/record_codec.h"
#include "store/internal/run_schema.h"
#include "store/internal/sqlite_db.h"

namespace gradscope {

namespace fs = std::filesystem;

namespace {

void check_name(const std::string& db, const std::string& name) {
  const std::vector<std::string>& known = run_document_names();
  if (std::find(known.begin(), known.end(), name) == known.end())
    throw Error(internal::stored_document_where(db, name) + ": not a document gradscope keeps in a run");
}

}  // namespace

const std::vector<std::string>& run_document_names() {
  static const std::vector<std::string> names = {"embedding.json", "trees.json", "units.json", "rows.json",
                                                 "compression.json"};
  return names;
}

int64_t upgrade_run(const std::string& run) {
  return internal::write_upgraded(run, "documents", [](internal::Database&, int64_t) {});
}

void put_run_document(const std::string& run, const std::string& name, const std::string& text) {
  check_name(internal::run_database(run), name);
  internal::write_upgraded(run, name,
                           [&](internal::Database& db, int64_t) { internal::put_document_row(db, name, text); });
}

std::optional<RunDocument> read_run_document(const std::string& run, const std::string& name,
                                             std::uintmax_t max_bytes, const std::string& kind) {
  const std::string path = internal::run_database(run);
  check_name(path, name);
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    // Partial: a run whose log lost its last steps still has its documents; a damaged
    // document is an Error all the same (RunReader::document).
    RunReader reader(path, ReadOptions{true});
    std::optional<std::string> text = reader.document(name, max_bytes);
    if (text) return RunDocument{std::move(*text), internal::stored_document_where(path, name), true};
    // A run of schema 5 keeps its documents inside: a file of that name beside it is left
    // from an older run in the same folder, not this run's.
    if (reader.schema_version() >= 5) return std::nullopt;
  }
  const fs::path side = fs::path(path).parent_path() / name;
  const std::string where = (kind.empty() ? "" : kind + " ") + "file '" + side.string() + "'";
  std::optional<std::string> text;
  try {
    text = internal::read_regular_file(side.string(), max_bytes);
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
  if (!text) return std::nullopt;
  return RunDocument{std::move(*text), where, false};
}

void append_run_log(const std::string& run, const std::vector<std::string>& lines) {
  for (const std::string& line : lines)
    if (line.find('\n') != std::string::npos)
      throw Error("run database '" + internal::run_database(run) + "', auto-fix log: a line holds a newline");
  internal::write_upgraded(run, "the auto-fix log",
                           [&](internal::Database& db, int64_t) { internal::append_log_rows(db, lines); });
}

std::vector<std::string> read_run_log(const std::string& run, std::uintmax_t max_bytes) {
  const std::string path = internal::run_database(run);
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) {
    RunReader reader(path, ReadOptions{true});
    if (reader.schema_version() >= 5) return reader.log_lines();  // never an older run's file
  }
  const fs::path side = fs::path(path).parent_path() / "audit.jsonl";
  std::optional<std::string> text;
  try {
    text = internal::read_regular_file(side.string(), max_bytes);
  } catch (const Error& e) {
    throw Error("audit log '" + side.string() + "': " + e.what());
  }
  std::vector<std::string> lines;
  if (!text) return lines;
  std::size_t start = 0;
  while (start < text->size()) {
    std::size_t end = text->find('\n', start);
    if (end == std::string::npos) end = text->size();
    if (end > start) lines.push_back(text->substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::vector<std::string> export_run_documents(const std::string& run, const std::string& dir) {
  std::vector<std::string> written;
  for (const std::string& name : run_document_names()) {
    const std::optional<RunDocument> doc = read_run_document(run, name, kMaxRunDocumentBytes, name);
    if (!doc) continue;
    try {
      internal::replace_file(dir, name, doc->text);
    } catch (const Error& e) {
      throw Error("cannot write '" + (fs::path(dir) / name).string() + "': " + e.what());
    }
    written.push_back(name);
  }
  const std::vector<std::string> log = read_run_log(run);
  if (!log.empty()) {
    std::string text;
    for (const std::string& line : log) text += line + "\n";
    try {
      internal::replace_file(dir, "audit.jsonl", text);
    } catch (const Error& e) {
      throw Error("cannot write '" + (fs::path(dir) / "audit.jsonl").string() + "': " + e.what());
    }
    written.push_back("audit.jsonl");
  }
  return written;
}

std::vector<std::string> stored_run_documents(const std::string& run) {
  RunReader reader(run, ReadOptions{true});
  return reader.document_names();
}

// A lost or added document is an Error also when partial: a document is read whole or not at
// all, and read_run_document reads every run partially (a log that lost its last steps).
std::optional<std::string> RunReader::document(const std::string& name, std::uintmax_t max_bytes) {
  if (version_ < 5) return std::nullopt;
  const std::string where = internal::stored_document_where(path_, name);
  internal::ReadTransaction tx(*db_);
  // Whether or not `name` is found: a lost document is not one the run never had.
  internal::check_committed_documents(*db_);
  internal::Statement s = db_->prepare(
      "SELECT length(CAST(body AS BLOB)), body, checksum, typeof(body), typeof(checksum) FROM documents WHERE name = ?");
  s.bind(1, name);
  if (!s.step()) return std::nullopt;
  if (s.column_text(3) != "text" || s.column_text(4) != "integer")
    throw Error(where + ": columns are not (text, integer) (a damaged table)");
  if (static_cast<std::uintmax_t>(s.column_int(0)) > max_bytes)
    throw Error(where + ": larger than the limit of " + std::to_string(max_bytes) + " bytes (" +
                std::to_string(s.column_int(0)) + " bytes)");
  std::string text = s.column_text(1);
  if (internal::row_checksum({name, text}) != s.column_int(2))
    throw Error(where + ": damaged (checksum mismatch)");
  return text;
}

std::vector<std::string> RunReader::document_names() {
  std::vector<std::string> names;
  if (version_ < 5) return names;
  internal::ReadTransaction tx(*db_);
  internal::check_committed_documents(*db_);
  internal::Statement s = db_->prepare("SELECT name FROM documents ORDER BY name");
  while (s.step()) names.push_back(s.column_text(0));
  return names;
}

std::vector<std::string> RunReader::log_lines() {
  std::vector<std::string> lines;
  if (version_ < 5) return lines;
  const std::string where = "run database '" + path_ + "': table interventions, row position ";
  internal::ReadTransaction tx(*db_);
  internal::Statement s = db_->prepare(
      "SELECT position, line, checksum, typeof(line), typeof(checksum) FROM interventions ORDER BY position");
  int64_t rows = 0;
  while (s.step()) {
    ++rows;
    const std::string position = std::to_string(s.column_int(0));
    if (s.column_text(3) != "text" || s.column_text(4) != "integer")
      throw Error(where + position + ": columns are not (text, integer) (a damaged table)");
    std::string line = s.column_text(1);
    if (internal::row_checksum({position, line}) != s.column_int(2))
      throw Error(where + position + ": damaged (checksum mismatch)");
    lines.push_back(std::move(line));
  }
  s = internal::Statement();
  check_row_count(internal::kInterventionRowsKey, "interventions", rows, true);
  return lines;
}

}  // namespace gradscope
