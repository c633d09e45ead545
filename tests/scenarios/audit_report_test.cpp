// The audit's report, judged step by step as each step ends with only the last step's records
// kept, equals the report rebuilt from every record the run produced (what report() computed
// before it kept aggregates), on real training runs: channel views and their dead channels,
// leakage between branches, NaN from step 20 on, saturation, and the gradient SNR, computed
// here apart from the audit from the parameters' gradients.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>

#include "../common/require_data.h"
#include "digits_data.h"
#include "../common/same_report.h"
#include "gradscope/core/audit/rules.h"
#include "scenario.h"

namespace gradscope::scenarios {
namespace {

constexpr int kSteps = 30;

// Per node: the sum over steps of each parameter's gradient, of ||g||^2, and the steps.
struct SnrSums {
  std::map<std::string, at::Tensor> sum;
  double sq = 0;
  int64_t steps = 0;
  double snr() const {
    if (steps == 0) return NodeReport::kNone;
    double mean_sq = 0;
    for (const auto& [name, s] : sum) mean_sq += s.pow(2).sum().item<double>();
    const double n = static_cast<double>(steps);
    mean_sq /= n * n;
    const double noise = sq / n - mean_sq;
    return noise > 0 ? mean_sq / noise : std::numeric_limits<double>::infinity();
  }
};

class AuditReport : public ::testing::TestWithParam<std::string> {};

TEST_P(AuditReport, JudgedAsStepsEndEqualsRebuiltFromEveryRecord) {
  GRADSCOPE_REQUIRE_DATA(digits_path());
  const cli::Digits data = cli::load_digits(digits_path(), 0.2, 7);
  ::torch::manual_seed(3);
  std::shared_ptr<ScenarioModel> model = scenario(GetParam()).make();
  std::vector<at::Tensor> trainable;
  for (const at::Tensor& p : model->parameters())
    if (p.requires_grad()) trainable.push_back(p);
  ::torch::optim::Adam optimizer(trainable, ::torch::optim::AdamOptions(1e-3));

  std::vector<Record> records;
  std::vector<ChannelRecord> channels;
  std::vector<SimilarityRecord> similarities;
  std::map<std::string, SnrSums> snr;
  torch::Audit* audit_ptr = nullptr;
  torch::AuditOptions o = scenario_audit_options(*model);
  o.gradient_snr = true;
  o.keep_steps = 1;  // only the step just ended: the report cannot come from kept records
  o.on_step = [&](const std::vector<Record>& step) {
    records.insert(records.end(), step.begin(), step.end());
    for (const ChannelRecord& c : audit_ptr->channel_records())
      if (c.step == step.front().step) channels.push_back(c);
    for (const SimilarityRecord& s : audit_ptr->similarity_records())
      if (s.step == step.front().step) similarities.push_back(s);
    // The gradients the step measured are still there after the optimizer step.
    for (const auto& child : model->audit_root()->named_children()) {
      SnrSums& sums = snr[child.key()];
      bool any = false;
      for (const auto& p : child.value()->named_parameters(true)) {
        const at::Tensor& g = p.value().grad();
        if (!p.value().requires_grad() || !g.defined()) continue;
        const at::Tensor gd = g.to(at::kDouble);
        auto [it, fresh] = sums.sum.try_emplace(p.key(), gd.clone());
        if (!fresh) it->second += gd;
        sums.sq += gd.pow(2).sum().item<double>();
        any = true;
      }
      sums.steps += any;
    }
  };
  torch::Audit audit(model->audit_root(), o);
  audit_ptr = &audit;
  model->train();
  const int64_t batch = kScenarioBatch;
  for (int step = 0; step < kSteps; ++step) {
    const int64_t begin = (step * batch) % (data.x_train.size(0) - batch);
    optimizer.zero_grad();
    const at::Tensor logits = model->forward(audit, data.x_train.narrow(0, begin, batch), step);
    ::torch::nn::functional::cross_entropy(logits, data.y_train.narrow(0, begin, batch)).backward();
    audit.step(optimizer);
  }
  EXPECT_LE(audit.records().size(), records.size() / kSteps + 1);  // one step kept

  ReportBuilder rebuilt(o.thresholds);
  for (const std::string& id : audit.node_ids()) rebuilt.declare(id);
  std::stable_sort(records.begin(), records.end(), [](const Record& a, const Record& b) { return a.step < b.step; });
  for (const Record& r : records) rebuilt.add(r);
  for (const ChannelRecord& c : channels) rebuilt.add(c);
  for (const SimilarityRecord& s : similarities) rebuilt.add(s);
  Report expected = rebuilt.build();
  for (NodeReport& n : expected.nodes)
    if (snr.count(n.node)) n.grad_snr = snr[n.node].snr();
  const Report actual = audit.report();
  test::expect_same_report(actual, expected, 1e-9);
  EXPECT_EQ(actual.steps, kSteps);
  // The runs carry the evidence they were chosen for.
  const Scenario& s = scenario(GetParam());
  bool flagged = false, any_snr = false;
  for (const NodeReport& n : actual.nodes) {
    flagged |= n.node == s.expected_node && n.flags.contains(s.expected_flag);
    any_snr |= std::isfinite(n.grad_snr) && n.grad_snr > 0;
  }
  EXPECT_TRUE(flagged || (s.healthy && actual.healthy()));
  EXPECT_TRUE(any_snr || s.expected_flag == Flag::kNaN);  // NaN gradients make it NaN
  EXPECT_FALSE(channels.empty());
}

// One scenario per kind of evidence: channel views with dead channels, leakage between
// branches, NaN from step 20, pre-activations into tanh, a residual model's free taps.
INSTANTIATE_TEST_SUITE_P(Scenarios, AuditReport,
                         ::testing::Values("dead-third", "leaky-branches", "nan-later", "saturated-tanh",
                                           "healthy-cnn"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace gradscope::scenarios
