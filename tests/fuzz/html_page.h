// The HTML report page of a loaded run, rendered as `gradscope html` renders it (build_charts,
// then render_html over cli::html_report_input, as cli::write_html_report does) with stand-in
// chart libraries: the 1.5 MB of vega the binary inlines is the same for every run, and
// copying it into each page was most of an input's time. Nothing is written to disk.
#pragma once

#include <string>

#include "gradscope/io/embedding/store.h"
#include "run_loading.h"

namespace gradscope::fuzz {

/// The page of `run` with `embedding` (null: the run has no embedding tables).
std::string render_html_page(const cli::LoadedRun& run, const EmbeddingRunSummary* embedding);

}  // namespace gradscope::fuzz
