// The scenario list, the one audit policy, and the training loop they share.
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include <ATen/ATen.h>

#include <chrono>

#include "gradscope/core/error.h"
#include "scenario_models.h"

namespace gradscope::scenarios {

const std::vector<Scenario>& all_scenarios() {
  static const std::vector<Scenario> list = {
      {"healthy-mlp", "64-64-32-10 ReLU MLP (control)", true, "", Flag::kHealthy, healthy_mlp},
      {"healthy-cnn", "two 3x3 conv layers, max-pool, linear head (control)", true, "", Flag::kHealthy,
       small_cnn},
      {"healthy-residual", "residual MLP with two blocks (control)", true, "", Flag::kHealthy, residual_mlp},
      {"vanishing-trunk", "8 Linear+Sigmoid layers with N(0, 0.01) weights", false, "trunk0",
       Flag::kVanishing, vanishing_trunk},
      {"exploding-layer", "fc2 fed features 1e5x too large (missing normalisation)", false, "fc2",
       Flag::kExploding, exploding_layer},
      {"nan-later", "a log layer whose input turns negative at step 20", false, "logfeat", Flag::kNaN,
       nan_later},
      {"dying-relu", "fc2 with bias -10 before its ReLU", false, "fc2", Flag::kDead, dying_relu},
      {"saturated-tanh", "fc1 weights 1000x before tanh", false, "fc1", Flag::kSaturated, saturated_tanh},
      {"starved-branch", "branch_b scaled by 1e-9 where the branches join", false, "branch_b",
       Flag::kVanishing, starved_branch},
      {"frozen-layer", "fc2 parameters do not require gradients", false, "fc2", Flag::kFrozen,
       frozen_layer},
      {"dead-third", "16 of fc2's 48 ReLU channels with bias -100", false, "fc2", Flag::kDeadChannels,
       dead_third},
      {"leaky-branches", "two branches initialised equal and summed: the same function", false,
       "branch_a", Flag::kLeakage, leaky_branches},
  };
  return list;
}

const Scenario& scenario(const std::string& name) {
  for (const Scenario& s : all_scenarios())
    if (s.name == name) return s;
  throw Error("unknown scenario '" + name + "'");
}

torch::AuditOptions scenario_audit_options(const ScenarioModel& model) {
  torch::AuditOptions o;
  o.channels_all_nodes = torch::ChannelView{1, 5, {}};
  o.leakage_pairs = model.branches();
  o.leakage_every = 5;
  o.free_nodes = model.free_nodes();
  return o;
}

ScenarioRun run_scenario(const Scenario& scenario, const cli::Digits& data, int steps, uint64_t seed,
                         const std::function<void(int)>& progress, RunSink* sink) {
  constexpr int64_t kBatch = kScenarioBatch;
  const int64_t n = data.x_train.defined() ? data.x_train.size(0) : 0;
  const int64_t n_test = data.x_test.defined() ? data.x_test.size(0) : 0;
  if (n < kBatch || n_test < 1)  // a batch is narrowed out of the training rows
    throw Error("scenario '" + scenario.name + "': " + std::to_string(n) + " training and " + std::to_string(n_test) +
                " test images; it needs a batch of " + std::to_string(kBatch) + " and at least one test image");
  const auto start = std::chrono::steady_clock::now();
  ::torch::manual_seed(seed);
  std::shared_ptr<ScenarioModel> model = scenario.make();
  std::vector<at::Tensor> trainable;
  for (const at::Tensor& p : model->parameters())
    if (p.requires_grad()) trainable.push_back(p);
  ::torch::optim::Adam optimizer(trainable, ::torch::optim::AdamOptions(1e-3));
  torch::AuditOptions options = scenario_audit_options(*model);
  options.sink = sink;
  options.keep_steps = 0;  // ScenarioRun::records holds every step
  torch::Audit audit(model->audit_root(), options);

  at::Tensor order = at::randperm(n);
  int64_t cursor = 0;
  ScenarioRun run;
  model->train();
  for (int step = 0; step < steps; ++step) {
    if (cursor + kBatch > n) {
      order = at::randperm(n);
      cursor = 0;
    }
    const at::Tensor idx = order.narrow(0, cursor, kBatch);
    cursor += kBatch;
    optimizer.zero_grad();
    const at::Tensor logits = model->forward(audit, data.x_train.index_select(0, idx), step);
    const at::Tensor loss = ::torch::nn::functional::cross_entropy(logits, data.y_train.index_select(0, idx));
    loss.backward();
    audit.step(optimizer);
    run.final_loss = loss.item<double>();
    if (progress) progress(step + 1);
  }
  audit.finish();
  run.report = audit.report();
  run.records = audit.records();
  run.architecture = audit.architecture();
  run.warnings = audit.warnings();
  {
    ::torch::NoGradGuard no_grad;
    model->eval();
    // A throwaway audit for evaluation: the training audit keeps training steps only.
    torch::Audit eval_audit(model->audit_root(), scenario_audit_options(*model));
    const at::Tensor predicted = model->forward(eval_audit, data.x_test, steps).argmax(1);
    run.test_accuracy = predicted.eq(data.y_test).to(at::kDouble).mean().item<double>();
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace gradscope::scenarios
