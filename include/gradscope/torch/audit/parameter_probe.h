// ParameterProbe: per-parameter records (gradient and value) of a LibTorch module.
//
//   gradscope::torch::ParameterProbe probe(*model);
//   gradscope::ReportBuilder report;
//   for (int64_t step = 0; step < steps; ++step) {
//     loss.backward();
//     for (auto& r : probe.measure(step)) report.add(r);   // after backward, before step()
//     optimizer.step();
//   }
//   std::cout << gradscope::render_table(report.build());
#pragma once

#include <torch/nn/module.h>

#include <string>
#include <vector>

#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/vocabulary/thresholds.h"

namespace gradscope::torch {

/// Measures every parameter of a module; each parameter is a node named by its path.
class ParameterProbe {
 public:
  /// The module must outlive the probe. `prefix` is prepended to node names ("model/").
  explicit ParameterProbe(const ::torch::nn::Module& module, Thresholds thresholds = {},
                          std::string prefix = {});

  /// Records kParamGrad (when the gradient is defined) and kParam for each parameter.
  /// Call after backward has accumulated gradients and before the optimizer step.
  std::vector<Record> measure(int64_t step) const;

 private:
  const ::torch::nn::Module& module_;
  StatsOptions options_;
  std::string prefix_;
};

}  // namespace gradscope::torch
