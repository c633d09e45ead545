// The seed corpus of the fuzz targets, written at test time by the fuzz_seeds program into
// <out>/<target>/<name>: files gradscope itself writes, and hand-made damage, each named for
// what it is. Nothing here is committed: the seeds follow the writers as they change.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace gradscope::fuzz {

/// Writes `bytes` as `dir`/`name` (creating `dir`). Throws Error naming the file on failure.
void write_seed(const std::filesystem::path& dir, const std::string& name, std::string_view bytes);
/// The bytes of `file`; throws Error naming it when it cannot be read.
std::string read_bytes(const std::filesystem::path& file);

/// <out>/run_db: runs (strict, hostile, non-finite, killed mid-write with their WAL, damaged);
/// <out>/wal: the write-ahead logs of killed runs, whole and damaged. `work`: scratch folder.
void write_run_seeds(const std::filesystem::path& out, const std::filesystem::path& work);

/// <out>/embedding_json: summaries saved by save_embedding_summary from real embedding rows,
/// and hand-made JSON (wrong types, sizes that disagree, deep nesting, other versions).
void write_embedding_seeds(const std::filesystem::path& out, const std::filesystem::path& work);

/// <out>/tree_*: the tree fixture models, XGBoost models trained on the real data sets, CSV.
/// Error when any is missing. The fixtures are in the repository (tests/data/trees); the data
/// in $GRADSCOPE_DATA_DIR, else the checkout's data/ (`make data`).
void write_tree_seeds(const std::filesystem::path& out);

/// <out>/compress_inputs: a profile, recipes, row profiles and row recipes as the writers
/// write them (each after the byte that chooses its reader), and one cut short.
void write_compress_seeds(const std::filesystem::path& out);

/// <out>/packed_file: the sample model (packed_sample.h) packed at every precision, pruned,
/// with bitmaps, given scales and tables at every row level, a plain safetensors file, and the
/// hostile files of issue 41.
void write_packed_seeds(const std::filesystem::path& out);

/// <out>/lsp_transport: framed sessions as an editor sends them (initialize, a Python and a
/// C++ file opened and changed, hovers, shutdown, exit), and framing cut short or damaged.
void write_lsp_seeds(const std::filesystem::path& out);

}  // namespace gradscope::fuzz
