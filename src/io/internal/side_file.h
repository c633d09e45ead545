// Files saved beside a run's run.db (embedding.json, trees.json): where they go when the user
// names the run or its database, and how they are replaced so that a reader never sees half of
// one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gradscope::internal {

/// The run directory of `dir`, which may name the run's run.db (or another file in it) instead.
std::filesystem::path run_folder(const std::string& dir);

/// Writes `text` to `folder`/`name` through a temporary file beside it, then renames it over the
/// old one: a reader sees the old file or the new. Creates `folder` if missing. Throws Error
/// saying what failed, without the path (the caller names the file): "cannot create the folder:
/// ...", "cannot write: ...", "write failed", "cannot replace: ...".
void replace_file(const std::filesystem::path& folder, const std::string& name,
                  const std::string& text);

/// The JSON document in the regular file `path` (read_regular_file, at most `max_bytes`),
/// parsed with parse_bounded's limits; nullopt when there is no file. Throws Error without the
/// path: what read_regular_file says, or "malformed: <what the parser said>".
std::optional<nlohmann::ordered_json> read_side_json(const std::filesystem::path& path,
                                                     std::uintmax_t max_bytes, int max_depth,
                                                     std::size_t max_members);

}  // namespace gradscope::internal
