// TeeSink: one RunSink that hands every step and summary to several, since an adapter has
// one sink pointer (AuditOptions::sink) and a run may go to the run store and to TensorBoard.
//
//   gradscope::RunWriter run("runs/exp1", {});
//   gradscope::tensorboard::TensorBoardSink tb("runs/exp1/tb");
//   gradscope::TeeSink both({&run, &tb});
//   options.sink = &both;
#pragma once

#include <vector>

#include "gradscope/core/audit/run_sink.h"

namespace gradscope {

/// Forwards to each sink in order. It does not own them; they must outlive it.
class TeeSink final : public RunSink {
 public:
  explicit TeeSink(std::vector<RunSink*> sinks) : sinks_(std::move(sinks)) {}
  /// In order; an exception from one sink stops the ones after it, as if it were the only sink.
  void add_step(const StepRecords& step) override {
    for (RunSink* s : sinks_) s->add_step(step);
  }
  void set_summary(const RunSummary& summary) override {
    for (RunSink* s : sinks_) s->set_summary(summary);
  }

 private:
  std::vector<RunSink*> sinks_;
};

}  // namespace gradscope
