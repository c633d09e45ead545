// How one fuzz input holds a run's two files, so the fuzzer can damage the database, its
// write-ahead log, or both: a 4-byte little-endian length n, n bytes of run.db, then the rest
// as run.db-wal. An input too short for its length (or for the prefix) is all run.db, no WAL.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gradscope::fuzz {

struct RunFiles {
  std::string_view db, wal;  ///< wal empty: no run.db-wal file
};

inline RunFiles split_run_input(const uint8_t* data, std::size_t size) {
  const std::string_view all(reinterpret_cast<const char*>(data), size);
  if (size < 4) return {all, {}};
  const uint32_t n = uint32_t{data[0]} | uint32_t{data[1]} << 8 | uint32_t{data[2]} << 16 |
                     uint32_t{data[3]} << 24;
  const std::string_view rest = all.substr(4);
  if (n > rest.size()) return {rest, {}};
  return {rest.substr(0, n), rest.substr(n)};
}

/// The input split_run_input() reads back as (db, wal).
inline std::string join_run_input(std::string_view db, std::string_view wal) {
  const auto n = static_cast<uint32_t>(db.size());
  std::string out{static_cast<char>(n & 0xff), static_cast<char>(n >> 8 & 0xff),
                  static_cast<char>(n >> 16 & 0xff), static_cast<char>(n >> 24 & 0xff)};
  return out.append(db).append(wal);
}

}  // namespace gradscope::fuzz
