// trees.json <-> TreeRunSummary (io/trees/store.h). The reader checks every field, so whoever
// renders a loaded summary (report, html, ls, diff) can index rounds, windows and features
// without checking again.
#pragma once

#include <nlohmann/json.hpp>

#include "gradscope/io/trees/store.h"

namespace gradscope::internal {

/// The version this build writes and the newest it reads. 2 added the findings' computed
/// confidence, the validation rise's test (confidence, rows, errors) and overfit_large_rise;
/// a version 1 file reads without them (NaN, -1, the default).
inline constexpr int64_t kTreeRunVersion = 2;

/// {"gradscope_tree_run": {...}}.
nlohmann::ordered_json tree_summary_to_json(const TreeRunSummary& summary);

/// The inverse; throws Error "<field path>: <what>" for anything tree_summary_to_json would
/// not have written (Stats are not in the file: they come back empty).
TreeRunSummary tree_summary_from_json(const nlohmann::ordered_json& doc);

}  // namespace gradscope::internal
