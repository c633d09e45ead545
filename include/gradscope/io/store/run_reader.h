// RunReader: reads a saved run, also while it is being written or after its writer crashed.
//
//   gradscope::RunReader run("runs/exp1");                 // throws Error naming the file
//   gradscope::ReportBuilder b(run.metadata().thresholds);
//   run.for_each([&](const gradscope::Record& r) { b.add(r); });
//   std::cout << gradscope::render_table(b.build());
//   // the whole report, as the audit built it: io/store/saved_report.h
//
// Only committed steps are visible, each complete. The reader never writes: it opens run.db,
// run.db-wal and run.db-shm read-only and never checkpoints, so a run on a read-only mount,
// owned by another user or on a full disk reads the same, and the files are byte-identical
// afterwards. A damaged database, a damaged log (frames SQLite would silently drop) or tables
// that contradict each other are an Error naming the file and the table or byte; with
// ReadOptions::partial the reader instead returns every complete step it can still read and
// says what it skipped or lost in warnings().
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/audit/channels.h"
#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/audit/run_sink.h"
#include "gradscope/io/store/read_damage.h"
#include "gradscope/io/store/run_metadata.h"

namespace gradscope {

namespace internal {
class Database;
enum class OpenMode;
class PrivateCopy;
struct LogState;
}

/// How to treat damage.
struct ReadOptions {
  bool partial = false;  ///< read the complete steps that remain instead of failing
};

/// Inclusive step range.
struct StepRange {
  int64_t from = std::numeric_limits<int64_t>::min();
  int64_t to = std::numeric_limits<int64_t>::max();
};

/// What for_each calls for each kind of stored item; kinds whose function is empty are not read.
struct RunVisitor {
  std::function<void(const Record&)> record;
  std::function<void(const ChannelRecord&)> channel;        ///< schema 3 and later
  std::function<void(const SimilarityRecord&)> similarity;  ///< schema 3 and later
  std::function<void(const ElementHistogram&)> histogram;   ///< schema 4 and later
  std::function<void(const AttentionRecord&)> attention;    ///< schema 6 and later
  /// The loss and global gradient norms (core/series), in step order, each with its own step;
  /// schema 7 and later. A StepRange selects the rows of its sampled steps.
  std::function<void(const StepScalar&)> scalar;
};

/// An open run. Each call reads a consistent snapshot of what is committed at that moment.
class RunReader {
 public:
  /// Opens `run` (a run directory, or its run.db). Throws Error naming the file when it is
  /// missing, not a gradscope run, damaged (unless partial) or from a newer schema.
  explicit RunReader(const std::string& run, ReadOptions options = {});
  ~RunReader();
  RunReader(RunReader&&) noexcept;
  RunReader& operator=(RunReader&&) noexcept;

  const RunMetadata& metadata() const { return meta_; }
  /// The schema version the database's header says, which decides the tables read.
  int64_t schema_version() const { return version_; }
  const std::string& database_path() const { return path_; }

  /// Committed steps now.
  int64_t step_count();
  /// Calls `fn` for every record of the committed steps in `range`, in step order, then
  /// `progress(steps_done, steps_total)` every few thousand records if given. Returns the
  /// number of steps visited.
  int64_t for_each(const std::function<void(const Record&)>& fn, StepRange range = {},
                   const std::function<void(int64_t, int64_t)>& progress = {});
  /// Same for every kind of item. The channel and similarity records, then the element
  /// histograms, come after the records of the range, each only when its step's records came (whole steps, also when partial).
  int64_t for_each(const RunVisitor& visit, StepRange range = {},
                   const std::function<void(int64_t, int64_t)>& progress = {});
  /// The summary the run's adapter handed over (architecture, warnings, per-node values), with
  /// the metadata's thresholds; those three are empty for a run of schema 1 or 2, or whose
  /// adapter never finished. A damaged row is an Error naming the table and row (partial: the
  /// row is skipped, with a warning).
  RunSummary summary();
  /// The run's document `name` (schema 5, io/store/run_documents.h); nullopt when it has none
  /// (always, before schema 5). A damaged row, a body over `max_bytes`, and (found or not) a
  /// table that lost a document meta lists as committed or holds one it does not list (meta's
  /// count, for a run without the names) are an Error naming the database and the document,
  /// also when partial: a document is whole or not there.
  std::optional<std::string> document(const std::string& name, std::uintmax_t max_bytes);
  /// The names of the documents the run holds, in name order; checked against meta as document().
  std::vector<std::string> document_names();
  /// The auto-fix log's lines in order (schema 5; empty before). Each row checked like a
  /// document's: a damaged one is an Error naming its position.
  std::vector<std::string> log_lines();
  /// Re-reads the metadata (the end time appears when the writer closes). A run opened before
  /// its writer logged anything is reopened to follow the log.
  void refresh_metadata();

  /// What partial reading skipped (empty when nothing was), and notes that are not damage
  /// (records of a site a newer gradscope measures).
  const std::vector<std::string>& warnings() const { return warnings_; }
  /// The damage partial reading skipped, each named by the part of the run it was in (empty when
  /// the run was whole; a strict read throws at the first).
  const std::vector<ReadDamage>& damage() const { return damage_; }

 private:
  void open_database();
  void open_as(const internal::LogState& state);
  void check_log();
  std::vector<std::pair<int64_t, std::string>> named_rows(const std::string& table, int64_t max_id,
                                                         const std::string& id_rule);
  void load_sites();
  void load_nodes();
  // Checks a meta key holding a row count against the rows read; `absent_is_zero` for keys a
  // writer only puts once it has such rows.
  void check_row_count(const char* key, const std::string& table, int64_t rows, bool absent_is_zero = false);
  // Steps that for_each saw rows of, and those it delivered (ascending).
  struct StepsRead {
    std::vector<int64_t> rows, delivered;
    bool stopped = false;
  };
  // Reads table channels, similarities, histograms, attention or scalars (`table`) in `range` after the steps;
  // returns the rows.
  int64_t read_step_table(const std::string& table, StepRange range, const StepsRead& steps,
                          const RunVisitor& visit);
  [[noreturn]] void damaged(const std::string& what) const;
  // Throws (strict) or records a warning `what; action` (partial).
  void tolerate(const std::string& what, const std::string& action = {});

  std::string path_;
  ReadOptions options_;
  std::unique_ptr<internal::PrivateCopy> copy_;  // of a log without its index; outlives db_
  std::unique_ptr<internal::Database> db_;
  internal::OpenMode mode_{};
  int64_t version_ = 0;             // schema version of the run
  RunMetadata meta_;
  std::vector<Record> nodes_;       // one template record per node id (name set)
  std::vector<bool> node_known_;    // false for ids whose row was dropped (partial)
  std::vector<int> site_map_;       // stored site id -> Site; -1 a newer site, -2 no row
  std::vector<std::string> warnings_;
  std::vector<ReadDamage> damage_;
  std::string reading_;             // the part being read, named in damage_
};

}  // namespace gradscope
