// A run's typed documents (embedding.json, trees.json, ...): where they go when the user names
// the run or its database (inside run.db, or as a file in a folder without one), and how a
// file is replaced so that a reader never sees half of one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace gradscope::internal {

/// The run directory of `dir`, which may name the run's run.db (or another file in it) instead.
std::filesystem::path run_folder(const std::string& dir);

/// The database of `run`: a folder's run.db, or `run` itself when it names a database file.
std::string run_database(const std::string& run);

/// Writes `text` to `folder`/`name` through a temporary file beside it, then renames it over the
/// old one: a reader sees the old file or the new. Creates `folder` if missing. Throws Error
/// saying what failed, without the path (the caller names the file): "cannot create the folder:
/// ...", "cannot write: ...", "write failed", "cannot replace: ...".
void replace_file(const std::filesystem::path& folder, const std::string& name,
                  const std::string& text);

/// A typed document of a run (io/store/run_documents.h), parsed.
struct JsonDocument {
  nlohmann::ordered_json json;
  std::string where;  ///< RunDocument::where: how errors name it
};

/// How errors name the document `name` that save_document would write for `dir`: "run
/// database '<db>', document '<name>'" when the folder holds a run.db, else "<kind> file
/// '<folder>/<name>'".
std::string document_where(const std::string& dir, const std::string& name, const std::string& kind);

/// Saves `text` as the document `name` of the run in `dir`: into its run.db when the folder
/// holds one (put_run_document), else as the file `name` in the folder (replace_file: an
/// export, or a run of documents only). Errors start with document_where.
void save_document(const std::string& dir, const std::string& name, const std::string& kind,
                   const std::string& text);

/// read_run_document, parsed with parse_bounded's limits; nullopt when there is none. Errors
/// start with the document's where: "malformed: <what the parser said>", or what
/// read_run_document says.
std::optional<JsonDocument> read_document_json(const std::string& dir, const std::string& name,
                                               const std::string& kind, std::uintmax_t max_bytes,
                                               int max_depth, std::size_t max_members);

}  // namespace gradscope::internal
