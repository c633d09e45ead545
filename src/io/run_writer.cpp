#include "gradscope/io/run_writer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <unordered_map>

#include "gradscope/core/error.h"
#include "gradscope/version.h"
#include "internal/record_codec.h"
#include "internal/sqlite_db.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kChunkRecords = 4096;  // records the producer batches per hand-over

// Schema 2: every row carries a checksum (internal/record_codec.h) and meta 'steps' counts the
// committed step rows, so a reader notices a damaged row and a lost one.
constexpr const char* kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum INTEGER NOT NULL);
CREATE TABLE sites(id INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum INTEGER NOT NULL);
CREATE TABLE nodes(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, checksum INTEGER NOT NULL);
CREATE TABLE steps(step INTEGER PRIMARY KEY, n_records INTEGER NOT NULL,
                   checksum INTEGER NOT NULL, records BLOB NOT NULL);
)sql";

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

constexpr const char* kPutMeta = "INSERT OR REPLACE INTO meta(key, value, checksum) VALUES(?, ?, ?)";

void put_meta(internal::Statement& s, const std::string& key, const std::string& value) {
  s.reset();
  s.bind(1, key);
  s.bind(2, value);
  s.bind(3, internal::row_checksum({key, value}));
  s.step();
}

void put_meta(internal::Database& db, const std::string& key, const std::string& value) {
  internal::Statement s = db.prepare(kPutMeta);
  put_meta(s, key, value);
}

}  // namespace

RunWriter::RunWriter(const std::string& dir, RunWriterOptions options) : options_(std::move(options)) {
  options_.thresholds.validate();
  if (options_.queue_capacity == 0) throw Error("run '" + dir + "': queue_capacity must be > 0");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("cannot create run directory '" + dir + "': " + ec.message());
  path_ = (fs::path(dir) / "run.db").string();
  if (fs::exists(path_)) {
    if (!options_.overwrite)
      throw Error("run '" + dir + "' already exists ('" + path_ + "'); remove it or choose another directory");
    // The old log goes first: SQLite would replay a stale run.db-wal onto the new database.
    for (const char* suffix : {"-wal", "-shm", ""}) fs::remove(path_ + suffix, ec);
  }
  const std::string name = options_.name.empty() ? fs::path(dir).lexically_normal().filename().string() : options_.name;
  // The schema and metadata are committed under a temporary name that is then renamed, so a
  // reader never sees a run.db without them (it did: "not a gradscope run" in the writer's
  // first milliseconds).
  static std::atomic<int> created{0};
  const std::string creating = (fs::path(dir) / (".run.db.creating-" + std::to_string(getpid()) + "-" +
                                                 std::to_string(created++))).string();
  const auto remove_creating = [&] {
    for (const char* suffix : {"", "-wal", "-shm", "-journal"}) fs::remove(creating + suffix, ec);
  };
  remove_creating();
  try {
    internal::Database db(creating, internal::OpenMode::kCreate);
    internal::Statement mode = db.prepare("PRAGMA journal_mode=WAL");
    if (!mode.step() || mode.column_text(0) != "wal")
      throw Error("run database '" + path_ + "': cannot switch to WAL mode (network file system?)");
    mode = internal::Statement();
    db.exec("BEGIN");
    db.exec(kSchema);
    for (int i = 0; i < kSiteCount; ++i) {
      internal::Statement s = db.prepare("INSERT INTO sites(id, name, checksum) VALUES(?, ?, ?)");
      const std::string site = site_name(static_cast<Site>(i));
      s.bind(1, int64_t{i});
      s.bind(2, site);
      s.bind(3, internal::row_checksum({std::to_string(i), site}));
      s.step();
    }
    put_meta(db, "name", name.empty() ? dir : name);
    put_meta(db, "start_time", utc_now_iso8601());
    put_meta(db, "host", host_name());
    put_meta(db, "command_line", options_.command_line);
    put_meta(db, "gradscope_version", kVersion);
    put_meta(db, "thresholds", thresholds_to_json(options_.thresholds));
    put_meta(db, "schema_version", std::to_string(kRunSchemaVersion));
    put_meta(db, "steps", "0");
    db.exec(("PRAGMA user_version=" + std::to_string(kRunSchemaVersion)).c_str());
    db.exec("COMMIT");
  } catch (...) {
    remove_creating();
    throw;
  }
  // Closing the only connection moved the log into the file and deleted it; a log left
  // behind would not follow the rename.
  if (fs::exists(creating + "-wal", ec) || !fs::exists(creating, ec)) {
    remove_creating();
    throw Error("run database '" + path_ + "': cannot create (the schema was not written to the file)");
  }
  fs::rename(creating, path_, ec);
  if (ec) {
    const std::string why = ec.message();
    remove_creating();
    throw Error("run database '" + path_ + "': cannot create (" + why + ")");
  }
  db_ = std::make_unique<internal::Database>(path_, internal::OpenMode::kReadWrite);
  db_->exec(options_.durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
  thread_ = std::thread(&RunWriter::run_thread, this);
}

RunWriter::~RunWriter() {
  try {
    close();
  } catch (...) {
    // close() reports errors; a destructor must not throw.
  }
  if (thread_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    not_empty_.notify_all();
    thread_.join();
  }
}

void RunWriter::check_step(int64_t step) {
  if (closed_) throw Error("run database '" + path_ + "': record added after close()");
  if (step == open_step_) return;
  if (step < 0) throw Error("run database '" + path_ + "': negative step " + std::to_string(step));
  if (step < open_step_ || step <= ended_step_)
    throw Error("run database '" + path_ + "': record for step " + std::to_string(step) +
                " arrived after step " + std::to_string(std::max(open_step_, ended_step_)) +
                " (steps must not decrease)");
  if (open_step_ >= 0) push(true);
  open_step_ = step;
  current_.step = step;
}

void RunWriter::add(const Record& record) {
  check_step(record.step);
  current_.records.push_back(record);
  if (current_.records.size() >= kChunkRecords) push(false);
}

void RunWriter::add(Record&& record) {
  check_step(record.step);
  current_.records.push_back(std::move(record));
  if (current_.records.size() >= kChunkRecords) push(false);
}

void RunWriter::push(bool ends_step) {
  if (current_.records.empty() && !ends_step) return;
  Chunk chunk = std::move(current_);
  current_ = Chunk{};
  // The next chunk is likely the size of this one (a step records the same sites each time);
  // reserving kChunkRecords for a step of 20 records would hold 600 KB per queued step.
  current_.records.reserve(std::min(kChunkRecords, chunk.records.size()));
  chunk.ends_step = ends_step;
  chunk.seq = next_seq_++;
  if (ends_step) {
    ended_step_ = open_step_;
    open_step_ = -1;
  }
  current_.step = open_step_;
  const std::size_t n = chunk.records.size();
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (queued_records_ > 0 && queued_records_ + n > options_.queue_capacity && !failure_) {
      ++queue_waits_;
      not_full_.wait(lock, [&] {
        return queued_records_ == 0 || queued_records_ + n <= options_.queue_capacity || failure_;
      });
    }
    rethrow_failure();
    queue_.push_back(std::move(chunk));
    queued_records_ += n;
  }
  not_empty_.notify_one();
}

void RunWriter::rethrow_failure() {
  if (failure_) std::rethrow_exception(failure_);
}

void RunWriter::end_step() {
  if (!closed_ && open_step_ >= 0) push(true);
}

void RunWriter::commit() {
  end_step();
  const uint64_t target = next_seq_ - 1;
  std::unique_lock<std::mutex> lock(mu_);
  committed_.wait(lock, [&] { return committed_seq_ >= target || failure_; });
  rethrow_failure();
}

void RunWriter::close() {
  if (closed_) return;
  std::exception_ptr error;
  try {
    commit();
  } catch (...) {
    error = std::current_exception();
  }
  closed_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  not_empty_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (error) std::rethrow_exception(error);
  db_->exec("BEGIN");
  put_meta(*db_, "end_time", utc_now_iso8601());
  put_meta(*db_, "queue_waits", std::to_string(queue_waits()));
  db_->exec("COMMIT");
  db_.reset();  // the last connection checkpoints the WAL into run.db
}

int64_t RunWriter::queue_waits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_waits_;
}

void RunWriter::run_thread() {
  internal::Database& db = *db_;
  std::deque<Chunk> batch;
  std::unordered_map<std::string, uint32_t> ids;
  std::string body;  // records of the step being encoded
  uint64_t in_body = 0;
  bool in_tx = false;
  try {
    internal::Statement insert_step =
        db.prepare("INSERT INTO steps(step, n_records, checksum, records) VALUES(?, ?, ?, ?)");
    internal::Statement insert_node = db.prepare("INSERT INTO nodes(id, name, checksum) VALUES(?, ?, ?)");
    internal::Statement count_steps = db.prepare(kPutMeta);
    int64_t steps = 0;  // committed step rows, kept in meta 'steps' with each transaction
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        not_empty_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) break;  // stop_ and drained
        batch.swap(queue_);
        queued_records_ = 0;
      }
      not_full_.notify_all();
      const uint64_t last_seq = batch.back().seq;
      db.exec("BEGIN");
      in_tx = true;
      for (Chunk& chunk : batch) {
        for (const Record& r : chunk.records) {
          auto it = ids.find(r.node);
          if (it == ids.end()) {
            const auto id = static_cast<uint32_t>(ids.size());
            insert_node.reset();
            insert_node.bind(1, int64_t{id});
            insert_node.bind(2, r.node);
            insert_node.bind(3, internal::row_checksum({std::to_string(id), r.node}));
            insert_node.step();
            it = ids.emplace(r.node, id).first;
          }
          internal::append_record(body, it->second, static_cast<uint8_t>(r.site), r.stats);
          ++in_body;
        }
        if (chunk.ends_step) {
          insert_step.reset();
          insert_step.bind(1, chunk.step);
          insert_step.bind(2, static_cast<int64_t>(in_body));
          insert_step.bind(3, internal::step_checksum(chunk.step, body));
          insert_step.bind_blob(4, body.data(), body.size());
          insert_step.step();
          ++steps;
          body.clear();
          in_body = 0;
        }
      }
      put_meta(count_steps, "steps", std::to_string(steps));
      db.exec("COMMIT");
      in_tx = false;
      batch.clear();
      {
        std::lock_guard<std::mutex> lock(mu_);
        committed_seq_ = last_seq;
      }
      committed_.notify_all();
    }
  } catch (...) {
    if (in_tx) sqlite3_exec(db.handle(), "ROLLBACK", nullptr, nullptr, nullptr);
    {
      std::lock_guard<std::mutex> lock(mu_);
      failure_ = std::current_exception();
    }
    not_full_.notify_all();
    committed_.notify_all();
  }
}

}  // namespace gradscope
