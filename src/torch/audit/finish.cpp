// Audit::finish: what the records alone cannot give a saved run, handed to the sink.
#include <algorithm>

#include "audit/state.h"

namespace gradscope::torch {

void Audit::finish() const {
  state_->settle();  // many processes: the last step's merge, handed over before the summary
  RunSink* sink = state_->options.sink;
  if (!sink || !state_->writes_run()) return;  // many processes: rank 0 writes the run
  // The loss of the ended steps after the last sampled one waits for a sampled step that will
  // not come: it goes to the sink now, as a step of scalars alone, and to the judged report.
  StepRecords tail;
  {
    State& s = *state_;
    std::lock_guard<std::mutex> lock(s.mutex);
    std::vector<StepScalar>& waiting = s.current.scalars;
    const auto ended = std::stable_partition(waiting.begin(), waiting.end(),
                                             [&](const StepScalar& x) { return x.step < s.step; });
    tail.scalars.assign(waiting.begin(), ended);  // in the order recorded: steps increasing
    waiting.erase(waiting.begin(), ended);
    for (const StepScalar& x : tail.scalars) s.judged.add(x);
  }
  if (!tail.scalars.empty()) {  // handed outside the lock, as step() hands its steps
    tail.step = tail.scalars.back().step;
    sink->add_step(tail);
  }
  RunSummary summary;
  summary.thresholds = state_->options.thresholds;
  summary.architecture = architecture();
  summary.warnings = warnings();
  // The SNR is computed by report() from the summed gradients, which no record holds.
  summary.values = node_values(report());
  sink->set_summary(summary);
}

}  // namespace gradscope::torch
