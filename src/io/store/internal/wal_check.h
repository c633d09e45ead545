// Checks an SQLite write-ahead log (run.db-wal) the way SQLite's recovery reads it, to tell
// when recovery will stop early. SQLite reads the frames in order and stops at the first one
// whose salts or cumulative checksum do not verify, silently ignoring every frame after it,
// committed or not; a reader that trusted it would show a shorter run without a word.
//
//   WalCheck c = check_wal_file(path + "-wal");
//   if (c.damaged()) ...  // c.damaged_frames frames from byte c.damaged_from are lost
//
// Format and checksum: https://www.sqlite.org/fileformat2.html#the_write_ahead_log
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gradscope::internal {

/// What SQLite's recovery will read of a log, and what it will silently drop.
struct WalCheck {
  int64_t bytes = 0;             ///< size of the log
  bool header_valid = false;     ///< magic, format version, page size and checksum verify
  bool header_damaged = false;   ///< the header fails while whole frames follow it: all are ignored
  uint32_t page_size = 0;        ///< from the header (0 when it is not a valid page size)
  uint32_t salt1 = 0, salt2 = 0; ///< from the header: which frames belong to this log
  int64_t frames = 0;            ///< whole frames in the file (a torn frame at the end is not one)
  int64_t valid_frames = 0;      ///< leading frames SQLite accepts
  int64_t committed_frames = 0;  ///< of those, up to the last commit frame: what a reader sees
  /// Frames written for this log (the header's salts) that SQLite will not read because an
  /// earlier frame fails: a damaged frame and everything after it. Frames of an earlier log
  /// (other salts), left over after SQLite restarted the log, are not counted: they are
  /// already in the database.
  int64_t damaged_frames = 0;
  int64_t damaged_from = -1;     ///< byte offset of the first damaged frame (0: the header)
  int64_t damaged_commits = 0;   ///< commit frames among the damaged ones (transactions lost)
  /// A frame verifies again after the damaged one: certainly damage, not a last write cut short.
  bool resumes_after_damage = false;

  bool damaged() const { return header_damaged || damaged_frames > 0; }
};

/// No limit on the frames checked: all of them, as SQLite's recovery reads a log.
constexpr int64_t kEveryFrame = INT64_MAX;

/// Checks the bytes of a log: its first `frame_limit` frames (those a live writer's index says
/// are committed; any after them are being written and are not judged).
WalCheck check_wal(std::string_view bytes, int64_t frame_limit = kEveryFrame);

/// Checks the log at `path`, reading one frame at a time; a missing file is an empty log.
/// Throws Error naming the file when it cannot be read.
WalCheck check_wal_file(const std::string& path, int64_t frame_limit = kEveryFrame);

/// What a live writer's index (run.db-shm) says of its log: SQLite's readers take the committed
/// frames from it and never look past them. Layout of the header ("WAL-index header", two
/// copies that must agree, checksummed in native byte order):
/// https://www.sqlite.org/walformat.html#the_wal_index_file_format
struct WalIndex {
  bool valid = false;        ///< both copies agree, initialised, version and checksum verify
  int64_t committed_frames = 0;  ///< mxFrame: frames a reader of the live log reads
  uint32_t salt1 = 0, salt2 = 0;  ///< the salts of the log it indexes
};

/// Reads the index header at `path`; invalid when missing, short, being written or damaged.
/// The file stays open for the life of the process: closing any descriptor of a file drops
/// every POSIX lock this process holds on it, SQLite's own included.
WalIndex read_wal_index(const std::string& path);

/// True while a connection has the log's index open: SQLite's connections hold a shared lock
/// on its "dead man switch" byte (offset 128 of run.db-shm) while open, and a reader trusts
/// the index, not recovery, only then. Locks of this very process count too (Linux's open
/// file description locks see them), so a writer in the same process is live.
/// Kept open like read_wal_index's file, for the same reason.
bool wal_index_in_use(const std::string& path);

}  // namespace gradscope::internal
