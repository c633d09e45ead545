// The fused passes on tensors a caller owns: what the Python optimizers (gradscope.optim.Adam,
// AdamW, SGD: torch.optim.Optimizer subclasses) call for each parameter, measuring for the audit
// as gradscope::torch::Adam does (docs/optimizers.md).
//
//   TensorPasses passes;
//   passes.take(param);                       // the optimizer may fuse this parameter
//   passes.begin();                           // at the start of each step
//   if (!passes.adam(param, grad, m, v, lr, 0.9, 0.999, 1e-8, 0, step, false)) { /* ATen ops */ }
#pragma once

#include <ATen/core/Tensor.h>

#include <unordered_set>

#include "gradscope/torch/optim/instrumented.h"

namespace gradscope::torch {

class TensorPasses : public InstrumentedOptimizer {
 public:
  /// The optimizer's step may update `param` in a fused pass (its group's options allow it).
  void take(const at::Tensor& param);
  /// It may not (its state is in a layout the pass cannot take): fuses(param) is false.
  void drop(const at::Tensor& param);
  /// Taken, and the parameter and its gradient float32, CPU, dense and contiguous.
  bool fuses(const at::Tensor& param) const override;
  /// Starts a step: forgets what the last one measured, takes up a measure request.
  void begin();
  /// One Adam (decoupled: AdamW) update of `param` with its moments, when fuses(param) and the
  /// moments are float32 CPU contiguous tensors of its size; false (nothing done) otherwise.
  bool adam(at::Tensor& param, const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq, double lr, double beta1,
            double beta2, double eps, double weight_decay, int64_t step, bool decoupled);
  /// One SGD update (`buffer`: the momentum buffer, undefined without momentum; `first`: the
  /// buffer takes this step's direction), on the same conditions.
  bool sgd(at::Tensor& param, const at::Tensor& buffer, double lr, double momentum, double dampening,
           double weight_decay, bool nesterov, bool first);

 private:
  std::unordered_set<const void*> taken_;
  const StatsOptions* measure_ = nullptr;
};

}  // namespace gradscope::torch
