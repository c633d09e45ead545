// The demo's models and training loop: real LibTorch training on the digits data, with every
// parameter measured at every step.
#pragma once

#include <torch/nn/modules/container/sequential.h>

#include <functional>
#include <string>

#include "digits.h"
#include "gradscope/core/record.h"
#include "gradscope/core/report.h"

namespace gradscope::cli {

struct DemoModel {
  std::string name;         // run name, e.g. "healthy-mlp"
  std::string description;  // one line for people
  ::torch::nn::Sequential net;
};

/// A 64-64-32-10 ReLU MLP with LibTorch's default initialisation.
DemoModel healthy_mlp();
/// A planted pathology: eight Linear+Sigmoid layers initialised with N(0, 0.01) weights, so
/// gradients shrink by ~25x per layer on their way back to the first layers.
DemoModel vanishing_sigmoid_trunk();

struct TrainResult {
  Report report;
  double test_accuracy = 0;
  double final_loss = 0;
  double seconds = 0;
};

/// Called with every record as it is measured (e.g. to write it to a run store).
using RecordSink = std::function<void(const Record&)>;

/// Trains with SGD (lr 0.1, momentum 0.9, batch 64) for `steps` steps, measuring every
/// parameter's gradient and value each step. `progress(step)` is called after each step.
TrainResult train(DemoModel& model, const Digits& data, int steps, uint64_t seed,
                  const std::function<void(int)>& progress, const RecordSink& sink = {});

}  // namespace gradscope::cli
