// Reading a whole input file whose path the user controls (embedding.json beside a run): only a
// regular file of bounded size is read, so that a FIFO in its place cannot block the reader, a
// link to /dev/zero cannot feed it without end, and a huge file cannot exhaust memory.
//
//   std::optional<std::string> text = read_regular_file(path, 16u << 20);   // nullopt: absent
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gradscope::internal {

/// The bytes of the regular file `path` (symbolic links followed), or nullopt when there is
/// none. Throws Error saying what is wrong, without the path (the caller names the file): "not
/// a regular file (a FIFO)", "larger than the limit of N bytes (M bytes)", "cannot read: ...".
std::optional<std::string> read_regular_file(const std::string& path, std::uintmax_t max_bytes);

}  // namespace gradscope::internal
