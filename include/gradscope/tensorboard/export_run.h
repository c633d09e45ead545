// export_run: a saved run as a TensorBoard event file, streamed step by step, so memory stays
// that of one step whatever the run's length (`gradscope export RUN --format tensorboard`).
//
//   gradscope::RunReader reader("runs/exp1");
//   gradscope::tensorboard::EventWriter writer("runs/exp1/tb");
//   gradscope::tensorboard::ExportInput in;
//   in.report_text = "...";                        // what `gradscope report` prints
//   gradscope::tensorboard::export_run(reader, writer, in);
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "gradscope/core/compress/recipe.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/trees/store.h"
#include "gradscope/tensorboard/event_writer.h"

namespace gradscope::tensorboard {

/// What the records do not hold.
struct ExportInput {
  std::string report_text;  ///< written as gradscope/report at the last step (report_markdown)
  const EmbeddingRunSummary* embedding = nullptr;  ///< its metrics and profiles at the last step, when saved
  const TreeRunSummary* trees = nullptr;  ///< a tree run's analysis: its round measures at each round's step
  const compress::MeasuredComparison* compression = nullptr;  ///< measured points, at the last step
  std::function<void(int64_t, int64_t)> progress;  ///< (steps done, steps total)
};

/// What was written.
struct ExportResult {
  int64_t steps = 0;   ///< steps read
  int64_t events = 0;  ///< events written
};

/// Writes one event per step of `reader` (the scalars and flags of step_scalars.h, judged with
/// the run's stored thresholds; for a tree run, its round's measures too), one per step with
/// channel records (their histograms), and at the last step the embedding metrics and profile
/// histograms and the report text. Every event's wall_time is the run's
/// start time: the run store keeps no time per step. Throws Error when the reader fails or a
/// write failed (naming the file).
ExportResult export_run(RunReader& reader, EventWriter& writer, const ExportInput& input);

}  // namespace gradscope::tensorboard
