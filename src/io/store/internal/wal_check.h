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

/// Checks the bytes of a log.
WalCheck check_wal(std::string_view bytes);

/// Checks the log at `path`, reading one frame at a time; a missing file is an empty log.
/// Throws Error naming the file when it cannot be read.
WalCheck check_wal_file(const std::string& path);

}  // namespace gradscope::internal
