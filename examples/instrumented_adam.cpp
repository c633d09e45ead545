// An audit at every step for about the price of the optimizer: gradscope's instrumented Adam
// updates each parameter in one pass that also measures it, and audit.step(optimizer) takes those
// statistics (docs/optimizers.md). Built as build/examples/example_instrumented_adam.
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <iostream>

#include "gradscope/io/render/table.h"
#include "gradscope/torch/audit/audit.h"
#include "gradscope/torch/optim/adam.h"

int main() {
  namespace nn = torch::nn;
  torch::manual_seed(0);
  nn::Sequential net({{"fc1", nn::Linear(8, 64)}, {"act", nn::Tanh()}, {"fc2", nn::Linear(64, 1)}});
  // LibTorch's Adam options and state; only the step is gradscope's.
  gradscope::torch::Adam optimizer(net->parameters(), torch::optim::AdamOptions(1e-2));

  gradscope::torch::Audit audit(net);
  const at::Tensor x = torch::randn({256, 8});
  const at::Tensor y = x.sum(1, /*keepdim=*/true).sin();
  for (int64_t step = 0; step < 100; ++step) {
    optimizer.zero_grad();
    nn::functional::mse_loss(audit.forward(net, x), y).backward();
    audit.step(optimizer);  // the optimizer's pass measures the parameters, gradients and updates
  }
  // The fused pass measured every parameter of the last step for the audit.
  std::cout << "measured by the optimizer: " << (optimizer.measured(net->parameters()[0]) ? "yes" : "no") << "\n";
  std::cout << gradscope::render_table(audit.report());
  return 0;
}
