#include "gradscope/io/run_reader.h"

#include <algorithm>
#include <filesystem>

#include "gradscope/core/error.h"
#include "internal/record_codec.h"
#include "internal/sqlite_db.h"

namespace gradscope {
namespace {

constexpr const char* kPartialHint = " (use --partial to read the complete steps that remain)";

// Ends the read transaction however for_each leaves.
struct ReadTransaction {
  explicit ReadTransaction(internal::Database& db) : db(db) { db.exec("BEGIN"); }
  ~ReadTransaction() { sqlite3_exec(db.handle(), "COMMIT", nullptr, nullptr, nullptr); }
  internal::Database& db;
};

}  // namespace

RunReader::RunReader(const std::string& run, ReadOptions options)
    : path_(run_database_path(run)), options_(options) {
  std::error_code ec;
  if (!std::filesystem::exists(path_, ec))
    throw Error("run database '" + path_ + "': no such file (is '" + run + "' a gradscope run?)");
  db_ = std::make_unique<internal::Database>(path_, false);
  // SQLite refuses a file shorter than its header says (truncated) unless the schema is
  // "writable"; partial reading needs exactly those files, and this reader never writes.
  if (options_.partial) db_->exec("PRAGMA writable_schema=ON");
  int64_t version = 0;
  try {
    version = db_->query_int("PRAGMA user_version");
    db_->query_int("SELECT count(*) FROM sqlite_schema");
  } catch (const Error& e) {
    damaged(e.what());
  }
  if (version > kRunSchemaVersion)
    throw Error("run database '" + path_ + "': schema version " + std::to_string(version) +
                " is newer than this gradscope reads (" + std::to_string(kRunSchemaVersion) +
                "); upgrade gradscope");
  if (version < 1) throw Error("run database '" + path_ + "': not a gradscope run (no schema version)");
  refresh_metadata();
  try {
    internal::Statement s = db_->prepare("SELECT id, name FROM sites");
    while (s.step()) {
      const int64_t id = s.column_int(0);
      const std::string name = s.column_text(1);
      if (id < 0 || id > 255) continue;
      if (site_map_.size() <= static_cast<std::size_t>(id)) site_map_.resize(static_cast<std::size_t>(id) + 1, -1);
      for (int i = 0; i < kSiteCount; ++i)
        if (name == site_name(static_cast<Site>(i))) site_map_[static_cast<std::size_t>(id)] = i;
    }
  } catch (const Error& e) {
    damaged(e.what());  // without sites no record can be read, even partially
  }
}

RunReader::~RunReader() = default;
RunReader::RunReader(RunReader&&) noexcept = default;
RunReader& RunReader::operator=(RunReader&&) noexcept = default;

void RunReader::damaged(const std::string& what) const { throw Error(what + kPartialHint); }

void RunReader::tolerate(const std::string& what, const std::string& action) {
  if (!options_.partial) damaged(what);
  const std::string w = action.empty() ? what : what + "; " + action;
  for (const std::string& x : warnings_)
    if (x == w) return;
  warnings_.push_back(w);
}

void RunReader::refresh_metadata() {
  try {
    internal::Statement s = db_->prepare("SELECT key, value FROM meta");
    RunMetadata m;
    while (s.step()) {
      const std::string key = s.column_text(0), value = s.column_text(1);
      if (key == "name") m.name = value;
      else if (key == "start_time") m.start_time = value;
      else if (key == "end_time") m.end_time = value;
      else if (key == "host") m.host = value;
      else if (key == "command_line") m.command_line = value;
      else if (key == "gradscope_version") m.gradscope_version = value;
      else if (key == "thresholds") m.thresholds = thresholds_from_json(value);
      else if (key == "schema_version") m.schema_version = std::stoll(value);
      else if (key == "queue_waits") m.queue_waits = std::stoll(value);
    }
    meta_ = m;
  } catch (const std::exception& e) {
    tolerate(std::string(e.what()).rfind("run database", 0) == 0
                 ? e.what()
                 : "run database '" + path_ + "': unreadable metadata (" + e.what() + ")");
  }
}

void RunReader::load_nodes() {
  try {
    internal::Statement s = db_->prepare("SELECT id, name FROM nodes ORDER BY id");
    while (s.step()) {
      const int64_t id = s.column_int(0);
      if (id < 0 || id > static_cast<int64_t>(UINT32_MAX)) continue;
      if (nodes_.size() <= static_cast<std::size_t>(id)) nodes_.resize(static_cast<std::size_t>(id) + 1);
      nodes_[static_cast<std::size_t>(id)].node = s.column_text(1);
    }
  } catch (const Error& e) {
    damaged(e.what());  // node names are needed for every record
  }
}

int64_t RunReader::step_count() {
  try {
    return db_->query_int("SELECT count(*) FROM steps");
  } catch (const Error& e) {
    tolerate(e.what());
    return -1;
  }
}

int64_t RunReader::for_each(const std::function<void(const Record&)>& fn, StepRange range,
                            const std::function<void(int64_t, int64_t)>& progress) {
  ReadTransaction tx(*db_);
  load_nodes();
  int64_t total = -1;
  if (progress) {
    try {
      internal::Statement c = db_->prepare("SELECT count(*) FROM steps WHERE step BETWEEN ? AND ?");
      c.bind(1, range.from);
      c.bind(2, range.to);
      total = c.step() ? c.column_int(0) : 0;
    } catch (const Error& e) {
      tolerate(e.what());
    }
  }
  internal::Statement s =
      db_->prepare("SELECT step, n_records, checksum, records FROM steps WHERE step BETWEEN ? AND ? ORDER BY step");
  s.bind(1, range.from);
  s.bind(2, range.to);
  int64_t steps = 0, since_progress = 0, last_step = -1;
  internal::StoredRecord stored;
  std::vector<internal::StoredRecord> records;
  for (;;) {
    try {
      if (!s.step()) break;
    } catch (const Error& e) {
      const std::string where = last_step >= 0 ? "after step " + std::to_string(last_step) : "before the first step";
      tolerate(e.what(), "stopped reading " + where);
      break;
    }
    const int64_t step = s.column_int(0);
    const std::string_view blob = s.column_blob(3);
    const std::string bad = "run database '" + path_ + "': step " + std::to_string(step);
    if (internal::checksum64(blob) != s.column_int(2)) {
      tolerate(bad + " is damaged (checksum mismatch)", "skipped");
      continue;
    }
    // Decode fully before calling fn, so a malformed step is never half-delivered.
    internal::StepDecoder dec(blob, static_cast<uint64_t>(std::max<int64_t>(0, s.column_int(1))));
    records.clear();
    while (dec.next(stored)) records.push_back(stored);
    if (!dec.ok() || static_cast<int64_t>(records.size()) != s.column_int(1)) {
      tolerate(bad + " is malformed", "skipped");
      continue;
    }
    bool missing_node = false;
    for (const internal::StoredRecord& r : records) missing_node |= r.node >= nodes_.size();
    if (missing_node) {
      tolerate(bad + " names a node missing from the nodes table", "skipped");
      continue;
    }
    for (const internal::StoredRecord& r : records) {
      if (r.site >= site_map_.size() || site_map_[r.site] < 0) {
        // Not damage: a newer gradscope may measure sites this build does not know.
        const std::string w = "run database '" + path_ + "': records of unknown site " +
                              std::to_string(r.site) + " ignored";
        bool seen = false;
        for (const std::string& x : warnings_) seen |= x == w;
        if (!seen) warnings_.push_back(w);
        continue;
      }
      Record& rec = nodes_[r.node];
      rec.step = step;
      rec.site = static_cast<Site>(site_map_[r.site]);
      rec.stats = r.stats;
      fn(rec);
    }
    ++steps;
    last_step = step;
    since_progress += static_cast<int64_t>(records.size());
    if (progress && since_progress >= 4096) {
      progress(steps, total);
      since_progress = 0;
    }
  }
  if (progress) progress(steps, total < 0 ? steps : total);
  return steps;
}

}  // namespace gradscope
