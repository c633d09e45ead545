// Instrumented Adam and AdamW: LibTorch's (same options, same state, same update formula) whose
// step updates each float32 CPU parameter in one fused pass that also measures it (the
// parameter, its gradient and the exact update: core/optim/adam_pass.h). An Audit stepping it
// (audit.step(opt)) takes those statistics instead of reading the parameters twice more.
//
//   gradscope::torch::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
//   audit.step(opt);   // or opt.step(): an Adam like LibTorch's
//
// Parameters the pass cannot take (another dtype or device, non-contiguous, amsgrad) are
// updated by LibTorch's own operations, as LibTorch's optimizer does, and measured by the audit
// as with any optimizer. docs/optimizers.md has the exactness and the cost.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

#include <vector>

#include "gradscope/torch/optim/instrumented.h"

namespace gradscope::torch {

class Adam : public ::torch::optim::Adam, public InstrumentedOptimizer {
 public:
  explicit Adam(std::vector<::torch::optim::OptimizerParamGroup> param_groups,
                ::torch::optim::AdamOptions defaults = {});
  explicit Adam(std::vector<at::Tensor> params, ::torch::optim::AdamOptions defaults = {});

  at::Tensor step(LossClosure closure = nullptr) override;
  bool fuses(const at::Tensor& param) const override;
};

/// AdamW: decoupled weight decay (p *= 1 - lr wd before the Adam step), LibTorch's AdamW.
class AdamW : public ::torch::optim::AdamW, public InstrumentedOptimizer {
 public:
  explicit AdamW(std::vector<::torch::optim::OptimizerParamGroup> param_groups,
                 ::torch::optim::AdamWOptions defaults = {});
  explicit AdamW(std::vector<at::Tensor> params, ::torch::optim::AdamWOptions defaults = {});

  at::Tensor step(LossClosure closure = nullptr) override;
  bool fuses(const at::Tensor& param) const override;
};

}  // namespace gradscope::torch
