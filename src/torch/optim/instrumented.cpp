#include "gradscope/torch/optim/instrumented.h"

namespace gradscope::torch {

void InstrumentedOptimizer::measure_next_step(const StatsOptions& options) {
  measure_ = true;
  options_ = options;
}

const FusedStats* InstrumentedOptimizer::measured(const at::Tensor& param) const {
  const auto it = measured_.find(param.unsafeGetTensorImpl());
  return it == measured_.end() ? nullptr : &it->second;
}

const StatsOptions* InstrumentedOptimizer::begin_step() {
  measured_.clear();
  const bool measure = measure_;
  measure_ = false;
  return measure ? &options_ : nullptr;
}

void InstrumentedOptimizer::record(const at::Tensor& param, const FusedStats& stats) {
  measured_[param.unsafeGetTensorImpl()] = stats;
}

}  // namespace gradscope::torch
