#include "gradscope/io/store/run_writer.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>

#include "gradscope/core/error.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/version.h"
#include "store/internal/channel_codec.h"
#include "store/internal/record_codec.h"
#include "store/internal/run_schema.h"
#include "store/internal/sqlite_db.h"
#include "store/internal/step_rows.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;

constexpr std::size_t kChunkRecords = 4096;  // records the producer batches per hand-over

std::string host_name() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
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
    // The old run's documents kept beside it (runs before schema 5) go with it.
    for (std::string name : run_document_names()) {
      const fs::path side = fs::path(dir) / name;
      if (fs::is_regular_file(fs::symlink_status(side, ec))) fs::remove(side, ec);
    }
    const fs::path log = fs::path(dir) / "audit.jsonl";
    if (fs::is_regular_file(fs::symlink_status(log, ec))) fs::remove(log, ec);
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
    db.exec(internal::kRunSchema);
    for (int i = 0; i < kSiteCount; ++i) {
      internal::Statement s = db.prepare("INSERT INTO sites(id, name, checksum) VALUES(?, ?, ?)");
      const std::string site = site_name(static_cast<Site>(i));
      s.bind(1, int64_t{i});
      s.bind(2, site);
      s.bind(3, internal::row_checksum({std::to_string(i), site}));
      s.step();
    }
    using internal::put_meta;
    put_meta(db, "name", name.empty() ? dir : name);
    put_meta(db, "start_time", utc_now_iso8601());
    put_meta(db, "host", host_name());
    put_meta(db, "command_line", options_.command_line);
    put_meta(db, "gradscope_version", kVersion);
    put_meta(db, "thresholds", thresholds_to_json(options_.thresholds));
    put_meta(db, "schema_version", std::to_string(kRunSchemaVersion));
    // New keys in the key-value table: older readers skip them, older runs read as one process.
    put_meta(db, "world_size", std::to_string(options_.world_size));
    put_meta(db, "backend", options_.backend);
    put_meta(db, internal::kStepRowsKey, "0");
    put_meta(db, internal::kChannelRowsKey, "0");
    put_meta(db, internal::kSimilarityRowsKey, "0");
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

void RunWriter::grew(std::size_t weight) {
  current_.weight += weight;
  if (current_.weight >= kChunkRecords) push(false);
}

void RunWriter::add(const Record& record) {
  check_step(record.step);
  current_.records.push_back(record);
  grew(1);
}

void RunWriter::add(Record&& record) {
  check_step(record.step);
  current_.records.push_back(std::move(record));
  grew(1);
}

void RunWriter::add(const ChannelRecord& record) {
  check_step(record.step);
  current_.channels.push_back(record);
  grew(1 + record.activation.size() + record.output_grad.size());
}

void RunWriter::add(const SimilarityRecord& record) {
  check_step(record.step);
  current_.similarities.push_back(record);
  grew(1);
}

void RunWriter::add(const ElementHistogram& histogram) {
  check_step(histogram.step);
  current_.histograms.push_back(histogram);
  grew(1 + histogram.buckets.size() / 8);  // a bucket takes a few bytes, a record 60
}

void RunWriter::add(const AttentionRecord& record) {
  check_step(record.step);
  current_.attention.push_back(record);
  grew(1 + record.heads.size() / 2);  // a head takes about 30 bytes, a record 60
}

void RunWriter::add(const StepScalar& scalar) {
  if (scalar.name.empty() || scalar.name.size() > internal::kMaxScalarName)
    throw Error("run database '" + path_ + "': a scalar's name must have 1 to " +
                std::to_string(internal::kMaxScalarName) + " bytes, got " + std::to_string(scalar.name.size()));
  if (scalar.step < 0) throw Error("run database '" + path_ + "': negative step " + std::to_string(scalar.step));
  // A scalar of a step the audit did not sample joins the open step's row; a later one opens
  // its own step, as a record would.
  if (open_step_ < 0 || scalar.step > open_step_) {
    check_step(scalar.step);
  } else if (closed_ || scalar.step <= ended_step_) {
    check_step(scalar.step);  // throws: closed, or a step already committed
  }
  current_.scalars.push_back(scalar);
  grew(1);
}

void RunWriter::add_step(const StepRecords& step) {
  for (const Record& r : step.records) add(r);
  for (const ChannelRecord& c : step.channels) add(c);
  for (const SimilarityRecord& r : step.similarities) add(r);
  for (const ElementHistogram& h : step.histograms) add(h);
  for (const AttentionRecord& a : step.attention) add(a);
  for (const StepScalar& x : step.scalars) add(x);
  end_step();
}

void RunWriter::set_summary(const RunSummary& summary) {
  if (closed_) throw Error("run database '" + path_ + "': summary set after close()");
  summary.thresholds.validate();
  Chunk chunk;
  chunk.step = -1;
  chunk.weight = 1 + summary.architecture.nodes.size() + summary.warnings.size() + summary.values.size();
  chunk.summary = std::make_shared<const RunSummary>(summary);
  chunk.seq = next_seq_++;
  enqueue(std::move(chunk));
}

void RunWriter::push(bool ends_step) {
  if (current_.weight == 0 && !ends_step) return;
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
  enqueue(std::move(chunk));
}

void RunWriter::enqueue(Chunk chunk) {
  const std::size_t n = chunk.weight;
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
  internal::put_meta(*db_, "end_time", utc_now_iso8601());
  internal::put_meta(*db_, "queue_waits", std::to_string(queue_waits()));
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
  bool in_tx = false;
  try {
    internal::StepRows rows(db);
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
        for (const Record& r : chunk.records) rows.add(r);
        for (const ChannelRecord& c : chunk.channels) rows.add(c);
        for (const SimilarityRecord& r : chunk.similarities) rows.add(r);
        for (const ElementHistogram& h : chunk.histograms) rows.add(h);
        for (const AttentionRecord& a : chunk.attention) rows.add(a);
        for (const StepScalar& x : chunk.scalars) rows.add(chunk.step, x);
        if (chunk.ends_step) rows.end_step(chunk.step);
        if (chunk.summary) internal::write_summary(db, *chunk.summary);
      }
      rows.put_counts();
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
