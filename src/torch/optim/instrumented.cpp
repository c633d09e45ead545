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

const ::torch::optim::OptimizerParamGroup* InstrumentedOptimizer::group_of(
    const ::torch::optim::Optimizer& optimizer, const at::Tensor& param) const {
  const auto& groups = optimizer.param_groups();
  std::size_t params = 0;
  for (const auto& g : groups) params += g.params().size();
  if (groups.size() != indexed_groups_ || params != indexed_params_) {  // add_param_group, or first use
    group_index_.clear();
    for (std::size_t i = 0; i < groups.size(); ++i)
      for (const at::Tensor& p : groups[i].params()) group_index_.emplace(p.unsafeGetTensorImpl(), i);
    indexed_groups_ = groups.size();
    indexed_params_ = params;
  }
  const auto it = group_index_.find(param.unsafeGetTensorImpl());
  return it == group_index_.end() ? nullptr : &groups[it->second];
}

}  // namespace gradscope::torch
