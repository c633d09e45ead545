// Writing a saved run's HTML report, shared by `gradscope html` and `gradscope demo`.
#pragma once

#include <string>

#include "run_loading.h"

namespace gradscope::cli {

/// Renders `run` (and <run>/embedding.json, <run>/trees.json when present) into `output`, a
/// self-contained page with the chart libraries built into this binary. With `spec_dir`, also
/// writes each chart's Vega-Lite spec there as <chart>.json. Returns the number of charts. Throws
/// Error naming a file that cannot be written.
int write_html_report(const LoadedRun& run, const std::string& output, const std::string& spec_dir = {});

}  // namespace gradscope::cli
