// Runs written the way a training run writes them, for the seed corpus and as the saved run
// the embedding target renders its input beside: RunWriter, several nodes, every site, the
// summaries computed from real float tensors, some unhealthy so that the rules, the gradient
// flow and the charts all have something to say.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/audit/run_sink.h"
#include "gradscope/core/vocabulary/thresholds.h"

namespace gradscope::fuzz {

struct SampleRun {
  int64_t steps = 12;
  bool hostile_names = false;  ///< node names with quotes, markup, U+2028, CJK, a 300-byte one
  bool nonfinite = false;      ///< NaN in one node from the middle step on, Inf in another
  Thresholds thresholds;       ///< recorded in the run's metadata
  int64_t commit_every = 0;    ///< also commit() every this many steps (0: only at close)
};

/// The records a probe would measure at `step` of `run`: six nodes (linear layers, a dead
/// ReLU, a saturated tanh, an embedding table, a frozen layer) over all eight sites.
std::vector<Record> sample_step(const SampleRun& run, int64_t step);

/// The channel view, branch similarity and attention a probe would measure at `step` (the
/// records empty): encoder/relu's 4 channels every other step, encoder/fc1 against encoder/fc2
/// (LEAKAGE), and encoder/fc1's two attention heads every third step (the second grows).
StepRecords sample_findings(const SampleRun& run, int64_t step);

/// What an audit hands over when it finishes: the six nodes in order, a warning, gradient SNRs.
RunSummary sample_summary(const SampleRun& run);

/// Writes `run` (records, findings, summary) into the run directory `dir` (replacing a run
/// there) and closes it.
void write_sample_run(const std::string& dir, const SampleRun& run);

}  // namespace gradscope::fuzz
