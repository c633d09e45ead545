// The text `gradscope report` prints for a saved run, shared with the TensorBoard export (its
// gradscope/report text), so the two never drift apart.
#pragma once

#include <string>
#include <vector>

#include "gradscope/io/embedding/store.h"
#include "gradscope/io/trees/store.h"
#include "run_loading.h"

namespace gradscope::cli {

/// "auto-fix log (N acts):" and per table and act type its count, steps and rows changed;
/// "" for no lines. Lines that are not acts (no layer, type or step) are counted apart.
std::string render_auto_fix_log(const std::vector<std::string>& lines);

/// The run header, the audit's warnings, the node table (or a tree run's timeline and
/// findings), the gradient flow, the embedding findings, the auto-fix log and the run's verdict.
std::string render_report_text(const LoadedRun& run, const EmbeddingRunSummary* embedding,
                               const TreeRunSummary* trees);

}  // namespace gradscope::cli
