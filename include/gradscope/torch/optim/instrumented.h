// What an optimizer that measures its own step offers the Audit: which parameters its next step
// updates in a fused pass, and what that pass measured (core/optim/adam_pass.h). The
// instrumented optimizers (adam.h: Adam, AdamW; sgd.h: SGD) implement it; audit.step(opt)
// recognises it. docs/optimizers.md.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/optimizer.h>

#include <unordered_map>

#include "gradscope/core/optim/adam_pass.h"

namespace gradscope::torch {

class InstrumentedOptimizer {
 public:
  virtual ~InstrumentedOptimizer() = default;
  /// Whether the next step() updates `param` in the fused pass (and so can measure it).
  virtual bool fuses(const at::Tensor& param) const = 0;
  /// The next step() measures the parameters it fuses with `options`; measured() has them.
  void measure_next_step(const StatsOptions& options);
  /// What the last step() measured of `param`; nullptr when it did not.
  const FusedStats* measured(const at::Tensor& param) const;

 protected:
  /// Called by step(): whether to measure, with which options; clears the last step's.
  const StatsOptions* begin_step();
  void record(const at::Tensor& param, const FusedStats& stats);
  /// The group of `optimizer` (this one) holding `param`, or nullptr. The audit asks fuses() of
  /// every parameter each step: an index, rebuilt when the groups change, keeps that linear.
  const ::torch::optim::OptimizerParamGroup* group_of(const ::torch::optim::Optimizer& optimizer,
                                                      const at::Tensor& param) const;

 private:
  mutable std::unordered_map<const void*, std::size_t> group_index_;
  mutable std::size_t indexed_groups_ = 0, indexed_params_ = 0;
  bool measure_ = false;
  StatsOptions options_;
  std::unordered_map<const void*, FusedStats> measured_;
};

}  // namespace gradscope::torch
