// Instrumented SGD: LibTorch's SGD (momentum, dampening, Nesterov, weight decay; the same options
// and momentum buffers) whose step updates each float32 CPU parameter in one fused pass that also
// measures it (core/optim/sgd_pass.h), for audit.step(opt) as adam.h's Adam.
//
//   gradscope::torch::SGD opt(model->parameters(), torch::optim::SGDOptions(0.1).momentum(0.9));
//   audit.step(opt);
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/optim/sgd.h>

#include <vector>

#include "gradscope/torch/optim/instrumented.h"

namespace gradscope::torch {

class SGD : public ::torch::optim::SGD, public InstrumentedOptimizer {
 public:
  explicit SGD(std::vector<::torch::optim::OptimizerParamGroup> param_groups, ::torch::optim::SGDOptions defaults);
  explicit SGD(std::vector<at::Tensor> params, ::torch::optim::SGDOptions defaults);

  at::Tensor step(LossClosure closure = nullptr) override;
  bool fuses(const at::Tensor& param) const override;
};

}  // namespace gradscope::torch
