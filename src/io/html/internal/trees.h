// The HTML report of a tree run (trees.json beside run.db): its charts and its section. The
// page around them (header, verdict, "What to do", footer, scripts) is html/report.cpp's.
#pragma once

#include <string>
#include <vector>

#include "gradscope/io/html/report.h"

namespace gradscope::internal {

/// tree-contribution (mean and max |round output|, velocity, mean |leaf| per round, log y, the
/// findings' rounds marked), tree-loss (training and validation loss after k rounds, the best
/// validation round marked), tree-concentration (HHI and drift per window), tree-features
/// (gain shares). A chart without data is left out.
std::vector<Chart> tree_charts(const TreeRunSummary& summary);

/// <section id="trees">: model and data, the charts (or a note for each one left out), the
/// window timeline, what was not judged, the features and the interaction suggestions.
std::string tree_section(const TreeRunSummary& summary, const std::vector<Chart>& charts);

}  // namespace gradscope::internal
