// RunWriter: saves records to a run directory from a background thread, crash-safely.
//
//   gradscope::RunWriterOptions opt;
//   opt.command_line = "train.py --lr 0.1";
//   gradscope::RunWriter run("runs/exp1", opt);          // creates runs/exp1/run.db
//   for (...) { for (auto& r : probe.measure(step)) run.add(r); run.end_step(); }
//   run.close();                                          // everything is on disk
//
// A RunWriter is a RunSink (core/audit/run_sink.h): AuditOptions::sink = &run hands it every
// audited step with its channel and similarity records, and Audit::finish() the run's summary
// (architecture, warnings, gradient SNR), so the saved run holds all the report needs.
//
// The training thread only copies records into a batch; a background thread encodes them and
// writes one row per step to SQLite in WAL mode (and that step's channel and similarity records
// in the same transaction). Each transaction holds whole steps only, so after a crash (even
// `kill -9`) reopening the run yields every step committed before it and no half-written step. synchronous=NORMAL survives process crashes; a power loss can lose the
// last transactions (set `durable` to fsync every commit). Readers may open the run at any
// time while it is written (WAL readers never block the writer).
//
// When the queue is full the training thread WAITS for the writer (backpressure) rather than
// dropping records: a diagnostics tool that silently loses the step where things broke is
// worse than a slower step. The waits are counted (queue_waits(), and in the run metadata).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gradscope/core/attention/rules.h"
#include "gradscope/core/audit/channels.h"
#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/audit/run_sink.h"
#include "gradscope/io/store/run_metadata.h"

namespace gradscope {

namespace internal {
class Database;
}

/// How a run is created.
struct RunWriterOptions {
  std::string name;                   ///< defaults to the directory name
  std::string command_line;           ///< recorded in the metadata
  Thresholds thresholds;              ///< recorded; `gradscope report` judges with them
  std::size_t queue_capacity = 1 << 16;  ///< records in flight before add() waits
  /// Replace an existing run instead of failing: its run.db and, from runs before schema 5,
  /// the documents it kept beside it (embedding.json, trees.json, units.json, rows.json,
  /// compression.json, audit.jsonl), which would otherwise outlive the run they described.
  bool overwrite = false;
  bool durable = false;               ///< fsync every commit (synchronous=FULL)
  int64_t world_size = 1;             ///< recorded: processes merged into the run (rank 0 writes)
  std::string backend;                ///< recorded: their c10d backend, e.g. "gloo"
};

/// Writes one run. add/end_step/commit/close/add_step/set_summary are for one producer thread.
class RunWriter final : public RunSink {
 public:
  /// Creates `dir` and its database. Throws Error naming the path when it cannot, or when a
  /// run exists there and `overwrite` is false.
  explicit RunWriter(const std::string& dir, RunWriterOptions options = {});
  /// Closes the run; errors are swallowed here, so call close() to see them.
  ~RunWriter() override;
  RunWriter(const RunWriter&) = delete;
  RunWriter& operator=(const RunWriter&) = delete;

  /// Queues a record. Steps must not decrease; a larger step ends the current one. Throws
  /// Error for a step that goes back, or when the background writer failed (disk full, ...).
  void add(const Record& record);
  void add(Record&& record);
  /// Channel and similarity records belong to their step like records, and are committed with it.
  void add(const ChannelRecord& record);
  void add(const SimilarityRecord& record);
  /// An element histogram (AuditOptions::histogram_every), committed with its step like them.
  void add(const ElementHistogram& histogram);
  /// A node's attention at a sampled step (core/attention), committed with its step like them.
  void add(const AttentionRecord& record);
  /// A per-step scalar (core/series: the loss, the global gradient norms), committed with the
  /// step being written; its own step may be earlier (a step the audit did not sample), never
  /// later, and one series' steps must not go back.
  void add(const StepScalar& scalar);
  /// RunSink: adds everything of `step` and ends it.
  void add_step(const StepRecords& step) override;
  /// RunSink: replaces the run's summary and the thresholds in its metadata, committed with the
  /// next transaction. Throws Error for invalid thresholds.
  void set_summary(const RunSummary& summary) override;
  /// Ends the current step now, so the writer can commit it without waiting for the next.
  void end_step();
  /// Ends the current step and blocks until every step so far is committed to disk.
  void commit();
  /// commit(), records the end time, stops the thread. Idempotent.
  void close();

  /// Times add() waited because the queue was full.
  int64_t queue_waits() const;
  /// Path of the database file.
  const std::string& database_path() const { return path_; }

 private:
  struct Chunk {
    int64_t step = 0;
    bool ends_step = false;
    uint64_t seq = 0;
    std::size_t weight = 0;  // records, channel summaries and similarities: the queue's unit
    std::vector<Record> records;
    std::vector<ChannelRecord> channels;
    std::vector<SimilarityRecord> similarities;
    std::vector<ElementHistogram> histograms;
    std::vector<AttentionRecord> attention;
    std::vector<StepScalar> scalars;
    std::shared_ptr<const RunSummary> summary;  // set: replaces the run's summary
  };
  void check_step(int64_t step);
  void grew(std::size_t weight);
  void push(bool ends_step);
  void enqueue(Chunk chunk);
  void run_thread();
  void rethrow_failure();

  std::string path_;
  RunWriterOptions options_;
  std::unique_ptr<internal::Database> db_;
  // Producer side (training thread only).
  Chunk current_;
  int64_t open_step_ = -1;   // step being filled (-1: none)
  int64_t ended_step_ = -1;  // last step handed over complete
  uint64_t next_seq_ = 1;
  bool closed_ = false;
  // Shared with the writer thread.
  mutable std::mutex mu_;
  std::condition_variable not_full_, not_empty_, committed_;
  std::deque<Chunk> queue_;
  std::size_t queued_records_ = 0;
  uint64_t committed_seq_ = 0;
  bool stop_ = false;
  int64_t queue_waits_ = 0;
  std::exception_ptr failure_;
  std::thread thread_;
};

}  // namespace gradscope
