// The text `gradscope report` prints for a saved run, shared with the TensorBoard export (its
// gradscope/report text), so the two never drift apart.
#pragma once

#include <string>

#include "gradscope/io/embedding/store.h"
#include "gradscope/io/trees/store.h"
#include "run_loading.h"

namespace gradscope::cli {

/// The run header, the audit's warnings, the node table (or a tree run's timeline and
/// findings), the gradient flow, the embedding findings and the run's verdict.
std::string render_report_text(const LoadedRun& run, const EmbeddingRunSummary* embedding,
                               const TreeRunSummary* trees);

}  // namespace gradscope::cli
