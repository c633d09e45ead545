// RunMetadata: what a run directory says about itself, and where its files are.
//
//   gradscope::RunMetadata m = gradscope::RunReader(dir).metadata();
//   std::cout << m.start_time << " on " << m.host << ": " << m.command_line << "\n";
//
// A run is a directory holding `run.db`, an SQLite database in WAL mode (its `-wal` and
// `-shm` files appear beside it while it is open). The metadata lives in its `meta` table.
#pragma once

#include <cstdint>
#include <string>

#include "gradscope/core/vocabulary/thresholds.h"

namespace gradscope {

/// Schema version this build writes and the newest it reads (PRAGMA user_version). Version 2
/// added a checksum to every row and the committed step count; version 3 the channel and
/// similarity records and the run's summary (architecture, warnings, per-node values); version 4
/// the element histograms; version 5 the run's documents (its embedding, tree and compression
/// analyses, io/store/run_documents.h), which older runs kept as files beside run.db; version 6
/// the attention records (core/attention); version 7 the per-step scalars (the loss and the
/// global gradient norms, core/series). Runs of every older version still read (without what
/// they lack).
inline constexpr int64_t kRunSchemaVersion = 7;

/// Metadata of a run, written when it is created and completed when it is closed.
struct RunMetadata {
  std::string name;               ///< the run directory's name unless set
  std::string start_time;         ///< ISO 8601 UTC, e.g. "2026-12-02T10:31:07Z"
  std::string host;
  std::string command_line;
  std::string gradscope_version;
  Thresholds thresholds;          ///< the thresholds the run was judged with
  std::string end_time;           ///< empty while running, or when the writer was killed
  int64_t schema_version = kRunSchemaVersion;
  int64_t queue_waits = 0;        ///< times the training thread waited on a full queue
  int64_t world_size = 1;         ///< processes whose statistics the run merges (1 before issue 16)
  std::string backend;            ///< their c10d backend ("gloo"); empty for one process
};

/// The database file of a run: `run` itself when it is a file, else `run/run.db`.
std::string run_database_path(const std::string& run);

/// Current UTC time as ISO 8601 ("2026-12-02T10:31:07Z").
std::string utc_now_iso8601();

/// The thresholds as a one-line JSON object, and back (missing keys keep their defaults).
std::string thresholds_to_json(const Thresholds& thresholds);
Thresholds thresholds_from_json(const std::string& json);

}  // namespace gradscope
