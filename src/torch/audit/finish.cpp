// Audit::finish: what the records alone cannot give a saved run, handed to the sink.
#include "audit/state.h"

namespace gradscope::torch {

void Audit::finish() const {
  state_->settle();  // many processes: the last step's merge, handed over before the summary
  RunSink* sink = state_->options.sink;
  if (!sink || !state_->writes_run()) return;  // many processes: rank 0 writes the run
  RunSummary summary;
  summary.thresholds = state_->options.thresholds;
  summary.architecture = architecture();
  summary.warnings = warnings();
  // The SNR is computed by report() from the summed gradients, which no record holds.
  summary.values = node_values(report());
  sink->set_summary(summary);
}

}  // namespace gradscope::torch
