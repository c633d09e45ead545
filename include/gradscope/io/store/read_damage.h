// ReadDamage: one thing a partial read of a damaged run left out (RunReader::damage()), named
// by the part of the run it was in, so a report read with --partial can say which tables were
// damaged and what of them is missing.
#pragma once

#include <string>

namespace gradscope {

struct ReadDamage {
  /// The table ("steps", "attention", "scalars", "nodes", ...), "meta", or "log" (the write-ahead
  /// log, whose damaged frames SQLite drops).
  std::string part;
  /// What was damaged and what the reader did: "...: damaged (checksum mismatch); skipped".
  std::string what;
};

}  // namespace gradscope
