// The compression part of `gradscope demo`: the healthy digits MLP's recipe at a quarter of
// its FP32 size, applied, beside uniform INT8 and INT4 (docs/compression.md).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "digits.h"

namespace gradscope::cli {

/// Trains the healthy MLP into <out_dir>/demo-compress-mlp (run.db, with its units.json
/// document), writes the recipe from the saved run (recipe.json), applies it and the uniform
/// baselines, saves the measured points (the compression.json document), report.{txt,json} and
/// the HTML report; prints the comparison. Returns the demo's summary line.
std::string run_compression_demo(const Digits& data, const std::string& out_dir, int steps, uint64_t seed,
                                 std::vector<std::filesystem::path>& pages);

}  // namespace gradscope::cli
