// Planted-pathology scenarios: small LibTorch models, each with one known failure (or none),
// trained on real data under one audit policy. Used by the demo and by tests/scenarios.
//
//   for (const Scenario& s : all_scenarios()) {
//     ScenarioRun run = run_scenario(s, digits, /*steps=*/60, /*seed=*/7);
//     std::cout << s.name << ": " << run.report.nodes.size() << " nodes\n";
//   }
#pragma once

#include <torch/nn/module.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "digits.h"
#include "gradscope/core/vocabulary/flags.h"
#include "gradscope/core/audit/report.h"
#include "gradscope/core/audit/run_sink.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::scenarios {

/// A model whose forward taps its nodes into the audit.
struct ScenarioModel : ::torch::nn::Module {
  /// Logits for a batch of digits images [batch, 64] at training step `step`.
  virtual at::Tensor forward(torch::Audit& audit, const at::Tensor& x, int64_t step) = 0;
  /// Pairs of branch nodes that should carry different information (checked for LEAKAGE).
  virtual std::vector<std::pair<std::string, std::string>> branches() const { return {}; }
  /// Free (non-module) nodes the forward taps.
  virtual std::vector<std::string> free_nodes() const { return {}; }
  /// The module whose children are the audited nodes (a Sequential inside, or this).
  virtual std::shared_ptr<::torch::nn::Module> audit_root() { return shared_from_this(); }
};

/// A scenario model that is one Sequential, run child by child by the audit.
struct SequentialModel : ScenarioModel {
  explicit SequentialModel(::torch::nn::Sequential net) : net(register_module("net", net)) {}
  at::Tensor forward(torch::Audit& audit, const at::Tensor& x, int64_t) override {
    return audit.forward(net, x);
  }
  std::shared_ptr<::torch::nn::Module> audit_root() override { return net.ptr(); }
  ::torch::nn::Sequential net;
};

/// One scenario: what is planted and where the audit must find it.
struct Scenario {
  std::string name;      ///< e.g. "vanishing-trunk"
  std::string planted;   ///< one line for people
  bool healthy = false;  ///< a control: no flag at all
  std::string expected_node;
  Flag expected_flag = Flag::kHealthy;
  std::function<std::shared_ptr<ScenarioModel>()> make;
};

/// The controls (MLP, small CNN, residual MLP) and the nine planted pathologies.
const std::vector<Scenario>& all_scenarios();
const Scenario& scenario(const std::string& name);

/// The one audit policy every scenario runs under: default thresholds, every step, a channel
/// view of every node every 5 steps, and the model's branches compared for LEAKAGE.
torch::AuditOptions scenario_audit_options(const ScenarioModel& model);

struct ScenarioRun {
  Report report;
  std::vector<Record> records;
  Architecture architecture;
  std::vector<std::string> warnings;
  double test_accuracy = 0;
  double final_loss = 0;
  double seconds = 0;
};

/// Images per training step of run_scenario: the least training rows a data set needs.
constexpr int64_t kScenarioBatch = 64;

/// Trains with Adam (lr 1e-3, batch kScenarioBatch) for `steps` steps under the audit;
/// `sink` (e.g. a RunWriter) gets each step as it ends and, after the last, the audit's summary.
/// Throws Error naming the scenario when `data` has fewer than kScenarioBatch training or no
/// test images.
ScenarioRun run_scenario(const Scenario& scenario, const cli::Digits& data, int steps, uint64_t seed,
                         const std::function<void(int)>& progress = {}, RunSink* sink = nullptr);

}  // namespace gradscope::scenarios
