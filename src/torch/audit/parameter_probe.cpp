#include "gradscope/torch/audit/parameter_probe.h"

#include "gradscope/torch/tensor.h"

namespace gradscope::torch {

ParameterProbe::ParameterProbe(const ::torch::nn::Module& module, Thresholds thresholds,
                               std::string prefix)
    : module_(module), options_(thresholds.stats_options()), prefix_(std::move(prefix)) {
  thresholds.validate();
}

std::vector<Record> ParameterProbe::measure(int64_t step) const {
  std::vector<Record> out;
  for (const auto& item : module_.named_parameters(/*recurse=*/true)) {
    const std::string node = prefix_ + item.key();
    const at::Tensor& param = item.value();
    const at::Tensor& grad = param.grad();
    if (grad.defined()) out.push_back({step, node, Site::kParamGrad, stats_of(grad, node + ".grad", options_)});
    out.push_back({step, node, Site::kParam, stats_of(param, node, options_)});
  }
  return out;
}

}  // namespace gradscope::torch
