// trees.json <-> TreeRunSummary (io/trees/store.h). The reader checks every field, so whoever
// renders a loaded summary (report, html, ls, diff) can index rounds, windows and features
// without checking again.
#pragma once

#include <nlohmann/json.hpp>

#include "gradscope/io/trees/store.h"

namespace gradscope::internal {

/// The version this build writes and the newest it reads.
inline constexpr int64_t kTreeRunVersion = 1;

/// {"gradscope_tree_run": {...}}.
nlohmann::ordered_json tree_summary_to_json(const TreeRunSummary& summary);

/// The inverse; throws Error "<field path>: <what>" for anything tree_summary_to_json would
/// not have written (Stats are not in the file: they come back empty).
TreeRunSummary tree_summary_from_json(const nlohmann::ordered_json& doc);

}  // namespace gradscope::internal
