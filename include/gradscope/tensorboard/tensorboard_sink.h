// TensorBoardSink: a RunSink that writes a TensorBoard event file while training runs, the
// same scalars, flags and histograms `gradscope export --format tensorboard` writes from the
// saved run (step_scalars.h), and at each summary the findings as text.
//
//   gradscope::tensorboard::TensorBoardSinkOptions o;
//   o.thresholds = options.thresholds;               // the audit's, so the flags agree
//   gradscope::tensorboard::TensorBoardSink tb("runs/exp1/tb", o);
//   gradscope::RunWriter run("runs/exp1", {});
//   gradscope::TeeSink both({&run, &tb});            // both sinks (core/audit/tee_sink.h)
//   options.sink = &both;
//   ... train ...; audit.finish(); run.close(); tb.close();
//
// A failed write (disk full, file size limit) never stops training: add_step and set_summary
// never throw for it; the error is reported once (on_error, by default one line on stderr),
// nothing more is written, and the file ends at its last whole record.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "gradscope/core/audit/rules.h"
#include "gradscope/core/audit/run_sink.h"
#include "gradscope/core/audit/timeline.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/tensorboard/event_writer.h"
#include "gradscope/tensorboard/step_scalars.h"

namespace gradscope::tensorboard {

struct TensorBoardSinkOptions {
  Thresholds thresholds;  ///< the flags' thresholds: pass the audit's (AuditOptions::thresholds)
  /// Called once, with the first write error; default: "gradscope: warning: tensorboard: ..."
  /// on stderr.
  std::function<void(const std::string&)> on_error;
  double flush_seconds = 2.0;  ///< write at least this often, so TensorBoard shows recent steps
  EventWriterOptions writer;
};

class TensorBoardSink final : public RunSink {
 public:
  /// Creates the event file in `dir`. Throws Error when it cannot (before training starts).
  explicit TensorBoardSink(const std::string& dir, TensorBoardSinkOptions options = {});
  ~TensorBoardSink() override;

  /// The step's scalars, flags and channel histograms, as one event.
  void add_step(const StepRecords& step) override;
  /// The findings text (gradscope/report) at the last step: the node table, the gradient flow
  /// and the verdict, judged with TensorBoardSinkOptions::thresholds, nodes in the order first
  /// measured (the saved run's export gives `gradscope report`'s exact text).
  void set_summary(const RunSummary& summary) override;
  /// The embedding tables' metrics and profile histograms (add_embedding_metrics,
  /// add_embedding_profiles), as one event at the last step: what the export writes from the
  /// run's embedding.json document. Call it when the trackers' reports are final.
  void add_embedding(const EmbeddingRunSummary& summary);
  /// A boosted model's round measures (add_tree_round_metrics), one event per round at step =
  /// round, as the export writes a tree run's.
  void add_tree_rounds(const TreeDynamicsReport& report);
  /// Writes what is queued and closes the file. False when any write failed.
  bool close();

  bool failed() const { return writer_.failed(); }
  const std::string& error() const { return writer_.error(); }
  const std::string& path() const { return writer_.path(); }

 private:
  void check();

  TensorBoardSinkOptions options_;
  EventWriter writer_;
  StepScalars scalars_;
  int64_t last_step_ = 0;
  double last_flush_ = 0;
  bool reported_ = false;
  bool closed_ = false;
  // The findings text needs the whole run: per node accumulators, not the records.
  std::unique_ptr<ReportBuilder> report_;
  Timeline timeline_;
  FlowSummaryBuilder flow_;
  int64_t frames_summarized_ = 0;
};

}  // namespace gradscope::tensorboard
