#include "demo_training.h"

#include <torch/nn/functional/loss.h>
#include <torch/nn/init.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <chrono>

#include "gradscope/core/rules.h"
#include "gradscope/torch/parameter_probe.h"

namespace gradscope::cli {
namespace nn = ::torch::nn;

DemoModel healthy_mlp() {
  nn::Sequential net({{"fc1", nn::Linear(64, 64)},
                      {"relu1", nn::ReLU()},
                      {"fc2", nn::Linear(64, 32)},
                      {"relu2", nn::ReLU()},
                      {"out", nn::Linear(32, 10)}});
  return {"healthy-mlp", "64-64-32-10 ReLU MLP, default init", net};
}

DemoModel vanishing_sigmoid_trunk() {
  constexpr int kDepth = 8;
  nn::Sequential net;
  for (int i = 0; i < kDepth; ++i) {
    nn::Linear layer(64, 64);
    ::torch::NoGradGuard no_grad;
    nn::init::normal_(layer->weight, 0.0, 0.01);
    nn::init::zeros_(layer->bias);
    net->push_back("trunk" + std::to_string(i), layer);
    net->push_back("sigmoid" + std::to_string(i), nn::Sigmoid());
  }
  net->push_back("out", nn::Linear(64, 10));
  return {"vanishing-sigmoid", "8 Linear+Sigmoid layers with N(0, 0.01) init (planted: vanishing gradients)",
          net};
}

TrainResult train(DemoModel& model, const Digits& data, int steps, uint64_t seed,
                  const std::function<void(int)>& progress, const RecordSink& sink) {
  constexpr int64_t kBatch = 64;
  const auto start = std::chrono::steady_clock::now();
  ::torch::manual_seed(seed);
  ::torch::optim::SGD optimizer(model.net->parameters(),
                                ::torch::optim::SGDOptions(0.1).momentum(0.9));
  gradscope::torch::ParameterProbe probe(*model.net);
  ReportBuilder builder;
  const int64_t n = data.x_train.size(0);
  at::Tensor order = ::torch::randperm(n);
  int64_t cursor = 0;
  double loss_value = 0;
  model.net->train();
  for (int step = 0; step < steps; ++step) {
    if (cursor + kBatch > n) {
      order = ::torch::randperm(n);
      cursor = 0;
    }
    const at::Tensor idx = order.narrow(0, cursor, kBatch);
    cursor += kBatch;
    optimizer.zero_grad();
    const at::Tensor logits = model.net->forward(data.x_train.index_select(0, idx));
    const at::Tensor loss = nn::functional::cross_entropy(logits, data.y_train.index_select(0, idx));
    loss.backward();
    for (const Record& r : probe.measure(step)) {
      builder.add(r);
      if (sink) sink(r);
    }
    optimizer.step();
    loss_value = loss.item<double>();
    progress(step + 1);
  }
  TrainResult result;
  result.report = builder.build();
  result.final_loss = loss_value;
  {
    ::torch::NoGradGuard no_grad;
    model.net->eval();
    const at::Tensor predicted = model.net->forward(data.x_test).argmax(1);
    result.test_accuracy = predicted.eq(data.y_test).to(at::kDouble).mean().item<double>();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace gradscope::cli
