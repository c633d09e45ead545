// The nine planted pathologies. Each plants one failure; nothing here knows the thresholds.
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <ATen/ATen.h>

#include "scenario_models.h"

namespace gradscope::scenarios {
namespace nn = ::torch::nn;
namespace {

nn::Linear linear(int64_t in, int64_t out, double weight_scale = 1.0) {
  nn::Linear l(in, out);
  ::torch::NoGradGuard no_grad;
  l->weight.mul_(weight_scale);
  return l;
}

// A linear layer fed features whose scale is off by `input_scale` (a missing normalisation),
// with weights shrunk to compensate in the forward pass.
struct ScaledInputLinearImpl : nn::Module {
  ScaledInputLinearImpl(int64_t in, int64_t out, double input_scale)
      : input_scale(input_scale), fc(register_module("fc", linear(in, out, 1.0 / input_scale))) {}
  at::Tensor forward(const at::Tensor& x) { return fc->forward(x * input_scale); }
  double input_scale;
  nn::Linear fc;
};
// TORCH_MODULE spelled out: inside namespace gradscope, `torch::` names gradscope::torch.
struct ScaledInputLinear : ::torch::nn::ModuleHolder<ScaledInputLinearImpl> {
  using ModuleHolder::ModuleHolder;
};

// fc1 -> log(features) -> out. At kNaNStep one bias of the log layer is corrupted.
struct NanLater : ScenarioModel {
  nn::Linear fc1{64, 32}, logfeat{32, 16}, out{16, 10};
  NanLater() {
    register_module("fc1", fc1);
    register_module("logfeat", logfeat);
    register_module("out", out);
    ::torch::NoGradGuard no_grad;
    logfeat->bias.fill_(100.0);  // keeps the log's argument positive while training is sane
  }
  at::Tensor forward(torch::Audit& audit, const at::Tensor& x, int64_t step) override {
    if (step == kNaNStep) {
      ::torch::NoGradGuard no_grad;
      logfeat->bias[0].fill_(-1000.0);
    }
    at::Tensor h = audit.tap("fc1", fc1->forward(x).relu());
    h = audit.tap("logfeat", logfeat->forward(h).log());
    return audit.tap("out", out->forward(h));
  }
};

// Two branches; the second is scaled by 1e-9 where they join, so it starves for gradient.
struct StarvedBranch : ScenarioModel {
  nn::Linear branch_a{64, 32}, branch_b{64, 32}, out{64, 10};
  StarvedBranch() {
    register_module("branch_a", branch_a);
    register_module("branch_b", branch_b);
    register_module("out", out);
  }
  at::Tensor forward(torch::Audit& audit, const at::Tensor& x, int64_t) override {
    const at::Tensor a = audit.tap("branch_a", branch_a->forward(x).relu());
    const at::Tensor b = audit.tap("branch_b", branch_b->forward(x).relu());
    return audit.tap("out", out->forward(at::cat({a, b * 1e-9}, 1)));
  }
  std::vector<std::pair<std::string, std::string>> branches() const override {
    return {{"branch_a", "branch_b"}};
  }
};

// Two branches that start identical and are summed, so they get identical gradients and
// stay the same function: the second carries nothing new.
struct LeakyBranches : ScenarioModel {
  nn::Linear branch_a{64, 32}, branch_b{64, 32}, out{32, 10};
  LeakyBranches() {
    register_module("branch_a", branch_a);
    register_module("branch_b", branch_b);
    register_module("out", out);
    ::torch::NoGradGuard no_grad;
    branch_b->weight.copy_(branch_a->weight);
    branch_b->bias.copy_(branch_a->bias);
  }
  at::Tensor forward(torch::Audit& audit, const at::Tensor& x, int64_t) override {
    const at::Tensor a = audit.tap("branch_a", branch_a->forward(x).relu());
    const at::Tensor b = audit.tap("branch_b", branch_b->forward(x).relu());
    return audit.tap("out", out->forward(a + b));
  }
  std::vector<std::pair<std::string, std::string>> branches() const override {
    return {{"branch_a", "branch_b"}};
  }
};

std::shared_ptr<ScenarioModel> sequential(nn::Sequential net) {
  return std::make_shared<SequentialModel>(std::move(net));
}

// fc1 -> ReLU -> fc2 (where the failure is planted) -> ReLU -> out: the shape most share.
template <class PlantedLayer>
std::shared_ptr<ScenarioModel> around_fc2(PlantedLayer fc2, int64_t fc2_out) {
  return sequential(nn::Sequential({{"fc1", nn::Linear(64, 64)},
                                    {"relu1", nn::ReLU()},
                                    {"fc2", std::move(fc2)},
                                    {"relu2", nn::ReLU()},
                                    {"out", nn::Linear(fc2_out, 10)}}));
}

}  // namespace

std::shared_ptr<ScenarioModel> vanishing_trunk() {
  nn::Sequential net;
  for (int i = 0; i < 8; ++i) {
    nn::Linear layer(64, 64);
    ::torch::NoGradGuard no_grad;
    nn::init::normal_(layer->weight, 0.0, 0.01);
    nn::init::zeros_(layer->bias);
    net->push_back("trunk" + std::to_string(i), layer);
    net->push_back("sigmoid" + std::to_string(i), nn::Sigmoid());
  }
  net->push_back("out", nn::Linear(64, 10));
  return sequential(net);
}

std::shared_ptr<ScenarioModel> exploding_layer() {
  return around_fc2(ScaledInputLinear(64, 64, 1e5), 64);
}

std::shared_ptr<ScenarioModel> nan_later() { return std::make_shared<NanLater>(); }

std::shared_ptr<ScenarioModel> dying_relu() {
  nn::Linear fc2(64, 64);
  {
    ::torch::NoGradGuard no_grad;
    fc2->bias.fill_(-10.0);
  }
  return around_fc2(fc2, 64);
}

std::shared_ptr<ScenarioModel> saturated_tanh() {
  return sequential(nn::Sequential({{"fc1", linear(64, 64, 1000.0)},
                                    {"tanh1", nn::Tanh()},
                                    {"fc2", nn::Linear(64, 32)},
                                    {"relu2", nn::ReLU()},
                                    {"out", nn::Linear(32, 10)}}));
}

std::shared_ptr<ScenarioModel> starved_branch() { return std::make_shared<StarvedBranch>(); }

std::shared_ptr<ScenarioModel> frozen_layer() {
  nn::Linear fc2(64, 32);
  for (auto& p : fc2->parameters()) p.set_requires_grad(false);
  return around_fc2(fc2, 32);
}

std::shared_ptr<ScenarioModel> dead_third() {
  nn::Linear fc2(64, 48);
  {
    ::torch::NoGradGuard no_grad;
    fc2->bias.narrow(0, 0, 16).fill_(-100.0);  // 16 of 48 channels never fire
  }
  return around_fc2(fc2, 48);
}

std::shared_ptr<ScenarioModel> leaky_branches() { return std::make_shared<LeakyBranches>(); }

}  // namespace gradscope::scenarios
