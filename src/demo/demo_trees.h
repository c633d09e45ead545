// The boosted-trees part of `gradscope demo`: a healthy XGBoost model and a planted overfit one
// trained live on breast_cancer, each recorded as a run with XGBoostRecorder (docs/trees.md).
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace gradscope::cli {

/// Trains both models from <data_dir>/breast_cancer.csv into <out_dir>/demo-trees-healthy and
/// <out_dir>/demo-trees-overfit (run.db, trees.json, model.json, report.txt, report.json,
/// report.html), prints each one's findings, and returns the summary lines. Without the data
/// file it says so and returns no line.
std::vector<std::string> run_tree_demo(const std::string& data_dir, const std::string& out_dir,
                                       uint64_t seed, std::vector<std::filesystem::path>& pages);

}  // namespace gradscope::cli
