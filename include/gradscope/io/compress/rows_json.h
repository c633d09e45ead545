// Embedding-table compression as JSON: the row rule's input saved beside a run (rows.json: per
// row the tracker's positive lookups and exposure, and the final table's row statistics), and
// row recipes as `gradscope compress RUN --table NAME=BYTES` writes them.
//
//   gradscope::save_row_profiles("runs/exp1", {gradscope::compress::row_profile("item", table, tracker_rows)});
//   auto tables = gradscope::load_run_row_profiles("runs/exp1");  // what `gradscope compress` reads
//   std::string text = gradscope::render_row_recipes_json({gradscope::compress::make_row_recipe(tables[0], 40000)});
//
// The run store keeps node-level records and embedding.json keeps per-table summaries only; the
// row rule needs one value per row, so rows.json carries them, as units.json does for units.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradscope/core/compress/rows.h"

namespace gradscope {

/// {"gradscope_compression_rows": {"version": 1, "tables": [{"table", "rows", "dim", "lookups",
/// "exposed", "max_abs", "sum_sq", "fallback_sq", "fallback"}]}}; numbers round-trip exactly.
std::string render_row_profiles_json(const std::vector<compress::RowProfile>& tables, int indent = -1);
/// Reads and checks (compress::check_row_profile) every table; errors name `source` and field.
std::vector<compress::RowProfile> parse_row_profiles_json(const std::string& text, const std::string& source);

/// The largest rows.json read: 1 GiB (a row takes some 60 bytes: 16 million rows).
constexpr std::uintmax_t kMaxRowProfileBytes = std::uintmax_t{1} << 30;

/// The run's rows.json document (inside its run.db; a file in a folder without one); replaces it.
void save_row_profiles(const std::string& run, const std::vector<compress::RowProfile>& tables);
/// Reads the run's rows.json. Throws Error naming the run and what it lacks when there is none
/// (and whether it has embedding.json, whose summaries do not suffice), or naming the field.
std::vector<compress::RowProfile> load_run_row_profiles(const std::string& run);

/// {"gradscope_row_recipes": {"version": 1, "tables": [{"table", "method", "rows", "dim",
/// "bytes", "fp32_bytes", "predicted_cost", "premise", "action", "level": ["int8", ...],
/// "fallback"}]}}.
std::string render_row_recipes_json(const std::vector<compress::RowRecipe>& recipes, int indent = 2);
/// Reads row recipes; sizes are recomputed from the levels, never taken from the file.
std::vector<compress::RowRecipe> parse_row_recipes_json(const std::string& text, const std::string& source);

}  // namespace gradscope
