// Instrumented Adam: LibTorch's Adam (same options, same state, same update formula) whose step
// updates each float32 CPU parameter in one fused pass that also measures it (the parameter,
// its gradient and the exact update: core/optim/adam_pass.h). An Audit stepping it
// (audit.step(opt)) takes those statistics instead of reading the parameters twice more.
//
//   gradscope::torch::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
//   audit.step(opt);   // or opt.step(): an Adam like LibTorch's
//
// Parameters the pass cannot take (another dtype or device, non-contiguous, sparse gradients,
// amsgrad) are updated by LibTorch's own operations, as LibTorch's Adam does, and measured by
// the audit as with any optimizer. docs/optimizers.md has the exactness and the cost.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/adam.h>

#include <unordered_map>
#include <vector>

#include "gradscope/core/optim/adam_pass.h"

namespace gradscope::torch {

/// An optimizer that can measure its own step; the Audit asks it to.
class InstrumentedOptimizer {
 public:
  virtual ~InstrumentedOptimizer() = default;
  /// Whether the next step() updates `param` in the fused pass (and so can measure it).
  virtual bool fuses(const at::Tensor& param) const = 0;
  /// The next step() measures the parameters it fuses with `options`; measured() has them.
  void measure_next_step(const StatsOptions& options);
  /// What the last measuring step() measured of `param`; nullptr when it did not.
  const FusedStats* measured(const at::Tensor& param) const;

 protected:
  /// Called by step(): whether to measure, with which options; clears the last step's.
  const StatsOptions* begin_step();
  void record(const at::Tensor& param, const FusedStats& stats);

 private:
  bool measure_ = false;
  StatsOptions options_;
  std::unordered_map<const void*, FusedStats> measured_;
};

class Adam : public ::torch::optim::Adam, public InstrumentedOptimizer {
 public:
  explicit Adam(std::vector<::torch::optim::OptimizerParamGroup> param_groups,
                ::torch::optim::AdamOptions defaults = {});
  explicit Adam(std::vector<at::Tensor> params, ::torch::optim::AdamOptions defaults = {});

  at::Tensor step(LossClosure closure = nullptr) override;
  bool fuses(const at::Tensor& param) const override;
};

}  // namespace gradscope::torch
