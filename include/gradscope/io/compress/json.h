// Compression recipes and the rule's per-node profile as JSON. A recipe is written by
// `gradscope compress` and read by gradscope::compress::apply's callers; the profile
// (units.json beside a run's run.db) holds what the run store does not: shapes, per-unit
// channel statistics and final weight statistics.
//
//   std::string text = gradscope::render_recipe_json(recipe);
//   gradscope::compress::Recipe back = gradscope::parse_recipe_json(text, "recipe.json");
//   auto nodes = gradscope::load_compress_profile("runs/exp1/units.json");
//
// Non-finite numbers are written as null. Parsing checks every field and names it on error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/compress/recipe.h"

namespace gradscope {

/// {"gradscope_compression_recipe": {"version": 1, "method", "budget_bytes", "max_loss",
/// "bytes", "fp32_bytes", "predicted_loss", "magnitude_keep", "nodes": [{"node",
/// "weight_shape", "bias", "next", "next_fan", "precision", "pruned_units", "bytes",
/// "predicted_loss", "premise", "action", "expected_effect"}]}}.
std::string render_recipe_json(const compress::Recipe& recipe, int indent = 2);

/// Reads a recipe; throws Error "<source>: <field path>: <what>" on bad input (unknown
/// precision, negative sizes, a pruned unit outside the node, a missing field, not JSON).
compress::Recipe parse_recipe_json(const std::string& text, const std::string& source);

/// {"gradscope_compression_profile": {"version": 1, "nodes": [NodeProfile fields]}}.
std::string render_compress_profile_json(const std::vector<compress::NodeProfile>& nodes, int indent = 2);

/// Reads a profile and checks it (compress::check_profiles); errors name `source` and field.
std::vector<compress::NodeProfile> parse_compress_profile_json(const std::string& text, const std::string& source);

/// Reads `path` and parses it; a missing or unreadable file is an Error naming it.
std::vector<compress::NodeProfile> load_compress_profile(const std::string& path);
compress::Recipe load_recipe(const std::string& path);

}  // namespace gradscope

namespace gradscope {

/// The largest units.json and compression.json documents read: 64 MiB (a unit takes some 200
/// bytes, so this holds some 300,000 units) and 1 MiB (a few points a method).
constexpr std::uintmax_t kMaxProfileBytes = std::uintmax_t{64} << 20;
constexpr std::uintmax_t kMaxMeasuredBytes = std::uintmax_t{1} << 20;

/// The rule's input from a saved run: its units.json document (io/store/run_documents.h,
/// written by whoever trained it) with grad_sq, update_ratio and steps filled from run.db's
/// records. Throws Error naming the run or document when either is missing or damaged.
std::vector<compress::NodeProfile> load_run_compress_profile(const std::string& run);

/// The run's compression.json document (measured points; renderers only show them).
void save_measured_comparison(const std::string& run, const compress::MeasuredComparison& comparison);
/// Reads the run's compression.json; nullopt when there is none. Throws Error naming the file and
/// field when it is damaged.
std::optional<compress::MeasuredComparison> load_measured_comparison(const std::string& run);

/// The run's units.json document (inside its run.db; a file in a folder without one); replaces it.
void save_compress_profile(const std::string& run, const std::vector<compress::NodeProfile>& nodes);

}  // namespace gradscope
