// Healthy controls: they must come out with no flag at all.
#include <torch/nn/functional/pooling.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>

#include "scenario_models.h"

namespace gradscope::scenarios {
namespace nn = ::torch::nn;

std::shared_ptr<ScenarioModel> healthy_mlp() {
  return std::make_shared<SequentialModel>(nn::Sequential({{"fc1", nn::Linear(64, 64)},
                                                           {"relu1", nn::ReLU()},
                                                           {"fc2", nn::Linear(64, 32)},
                                                           {"relu2", nn::ReLU()},
                                                           {"out", nn::Linear(32, 10)}}));
}

namespace {

struct SmallCnn : ScenarioModel {
  nn::Conv2d conv1{nn::Conv2dOptions(1, 8, 3).padding(1)};
  nn::Conv2d conv2{nn::Conv2dOptions(8, 16, 3).padding(1)};
  nn::Linear out{16 * 4 * 4, 10};
  SmallCnn() {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("out", out);
  }
  at::Tensor forward(torch::Audit& audit, const at::Tensor& x, int64_t) override {
    at::Tensor h = audit.tap("conv1", conv1->forward(x.view({-1, 1, 8, 8})).relu());
    h = audit.tap("conv2", nn::functional::max_pool2d(conv2->forward(h).relu(),
                                                       nn::functional::MaxPool2dFuncOptions(2)));
    return audit.tap("out", out->forward(h.flatten(1)));
  }
};

struct ResidualMlp : ScenarioModel {
  nn::Linear inp{64, 64}, block1{64, 64}, block2{64, 64}, out{64, 10};
  ResidualMlp() {
    register_module("inp", inp);
    register_module("block1", block1);
    register_module("block2", block2);
    register_module("out", out);
  }
  at::Tensor forward(torch::Audit& audit, const at::Tensor& x, int64_t) override {
    at::Tensor h = audit.tap("inp", inp->forward(x).relu());
    h = audit.tap("block1", h + block1->forward(h).relu());
    h = audit.tap("block2", h + block2->forward(h).relu());
    return audit.tap("out", out->forward(h));
  }
};

}  // namespace

std::shared_ptr<ScenarioModel> small_cnn() { return std::make_shared<SmallCnn>(); }
std::shared_ptr<ScenarioModel> residual_mlp() { return std::make_shared<ResidualMlp>(); }

}  // namespace gradscope::scenarios
