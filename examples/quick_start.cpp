// Quick start: audit every node of a LibTorch model at every step, then print the report and
// fail loudly if a node is unhealthy. Built as build/examples/example_quick_start.
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <iostream>

#include "gradscope/io/render/table.h"
#include "gradscope/torch/audit/audit.h"

int main() {
  namespace nn = torch::nn;
  torch::manual_seed(0);
  nn::Sequential net({{"fc1", nn::Linear(8, 16)}, {"act", nn::Tanh()}, {"fc2", nn::Linear(16, 1)}});
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.05));

  gradscope::torch::Audit audit(net);  // nodes fc1, fc2; default thresholds (docs/architecture.md)

  const at::Tensor x = torch::randn({256, 8});
  const at::Tensor y = x.sum(1, /*keepdim=*/true).sin();
  for (int64_t step = 0; step < 100; ++step) {
    optimizer.zero_grad();
    nn::functional::mse_loss(audit.forward(net, x), y).backward();  // taps every child
    audit.step(optimizer);  // gradients after backward, optimizer.step(), the real update
  }

  const gradscope::Report result = audit.report();
  std::cout << gradscope::render_table(result);
  try {
    gradscope::assert_healthy(result);  // throws HealthError naming flagged nodes
  } catch (const gradscope::HealthError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
