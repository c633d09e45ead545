// A tour of the module audit on a two-branch model: taps, Sequential capture, a scope, a
// channel view, branch leakage, NaN origin, the report, the architecture and Mermaid.
// Built as build/examples/example_audit_tour and run by `make test`.
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <ATen/ATen.h>

#include <iostream>

#include "gradscope/io/render/architecture.h"
#include "gradscope/io/render/json.h"
#include "gradscope/io/render/table.h"
#include "gradscope/torch/audit/audit.h"

namespace nn = torch::nn;

// encoder: a Sequential trunk; two branches joined by a sum; a head.
struct Net : nn::Module {
  nn::Sequential encoder{{"fc1", nn::Linear(16, 32)}, {"act1", nn::ReLU()}, {"fc2", nn::Linear(32, 32)},
                         {"act2", nn::Tanh()}};
  nn::Linear left{32, 8}, right{32, 8}, head{8, 3};
  Net() {
    register_module("encoder", encoder);
    register_module("left", left);
    register_module("right", right);
    register_module("head", head);
  }
  at::Tensor forward(gradscope::torch::Audit& audit, const at::Tensor& x) {
    at::Tensor h = audit.tap("encoder", audit.forward(encoder, x));  // the node, then its parts
    const at::Tensor a = audit.tap("left", left->forward(h).relu());
    const at::Tensor b = audit.tap("right", right->forward(h).relu());
    return audit.tap("head", head->forward(a + b));
  }
};

int main() {
  torch::manual_seed(0);
  auto net = std::make_shared<Net>();
  torch::optim::Adam optimizer(net->parameters(), torch::optim::AdamOptions(1e-3));

  gradscope::torch::AuditOptions options;
  options.scopes["encoder"] = gradscope::torch::NodeScope::matching({"fc*"});  // encoder/fc1, encoder/fc2
  options.channels["left"] = gradscope::torch::ChannelView{/*dim=*/1, /*every=*/5, {}};
  options.leakage_pairs = {{"left", "right"}};
  options.gradient_snr = true;
  gradscope::torch::Audit audit(std::static_pointer_cast<nn::Module>(net), options);

  const at::Tensor x = at::randn({128, 16});
  const at::Tensor y = at::randint(0, 3, {128});
  for (int step = 0; step < 30; ++step) {
    optimizer.zero_grad();
    nn::functional::cross_entropy(net->forward(audit, x), y).backward();
    audit.step(optimizer);  // reads gradients, runs optimizer.step(), measures the update
  }

  const gradscope::Report report = audit.report();
  std::cout << gradscope::render_table(report) << "\n";
  std::cout << gradscope::render_mermaid(audit.architecture(), report) << "\n";
  std::cout << "nodes in execution order:";
  for (const auto& id : audit.node_ids()) std::cout << " " << id;
  std::cout << "\nrecords kept: " << audit.records().size() << "\n";
  return report.healthy() ? 0 : 1;
}
