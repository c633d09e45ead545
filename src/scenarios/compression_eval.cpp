#include "compression_eval.h"

#include <torch/nn/functional/loss.h>
#include <torch/nn/functional/pooling.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <chrono>
#include <tuple>

#include "gradscope/core/error.h"
#include "gradscope/torch/compress/apply_recipe.h"
#include "gradscope/torch/compress/search.h"
#include "scenario_models.h"

namespace gradscope::scenarios {
namespace nn = ::torch::nn;
namespace {

struct FashionCnn : ScenarioModel {
  nn::Conv2d conv1{nn::Conv2dOptions(1, 8, 3).padding(1)};
  nn::Conv2d conv2{nn::Conv2dOptions(8, 16, 3).padding(1)};
  nn::Linear out{16 * 7 * 7, 10};
  FashionCnn() {
    register_module("conv1", conv1);
    register_module("conv2", conv2);
    register_module("out", out);
  }
  at::Tensor forward(torch::Audit& audit, const at::Tensor& x, int64_t) override {
    const auto pool = nn::functional::MaxPool2dFuncOptions(2);
    at::Tensor h = audit.tap("conv1", nn::functional::max_pool2d(conv1->forward(x.view({-1, 1, 28, 28})).relu(), pool));
    h = audit.tap("conv2", nn::functional::max_pool2d(conv2->forward(h).relu(), pool));
    return audit.tap("out", out->forward(h.flatten(1)));
  }
  // Each node's input, for its calibration Gram matrix: conv inputs as unfolded patches.
  std::map<std::string, at::Tensor> node_inputs(const at::Tensor& x) {
    const auto pool = nn::functional::MaxPool2dFuncOptions(2);
    const at::Tensor x0 = x.view({-1, 1, 28, 28});
    const at::Tensor h1 = nn::functional::max_pool2d(conv1->forward(x0).relu(), pool);
    const at::Tensor h2 = nn::functional::max_pool2d(conv2->forward(h1).relu(), pool);
    auto patches = [](const at::Tensor& t) {  // [N, C*9, L] -> [N*L, C*9]
      return at::im2col(t, {3, 3}, {1, 1}, {1, 1}, {1, 1}).transpose(1, 2).reshape({-1, t.size(1) * 9});
    };
    return {{"conv1", patches(x0)}, {"conv2", patches(h1)}, {"out", h2.flatten(1)}};
  }
};

// Issue 13's Z > 0 attempt, fixed before measuring: uniform INT4, then INT8 for the node with
// the largest predicted INT4 cost, paid for by pruning the units of least predicted pruning
// cost (any prunable node) until the model fits `budget_bytes` again.
compress::Recipe int8_top_recipe(const std::vector<compress::NodeProfile>& profiles, int64_t budget_bytes) {
  using namespace compress;
  Recipe r = uniform_recipe(profiles, Precision::kInt4);
  r.method = "int8-top-pruned";
  std::size_t top = 0;
  double worst = -1;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    const double l = predicted_loss(profiles[i], r.nodes[i]);
    if (l > worst) worst = l, top = i;
  }
  r.nodes[top].precision = Precision::kInt8;
  // Every prunable unit by its predicted pruning cost (the decision with that unit alone pruned,
  // at FP32, costs exactly that), cheapest first.
  std::vector<std::tuple<double, std::size_t, int64_t>> units;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    if (profiles[i].next.empty() || profiles[i].next_fan < 1) continue;
    for (int64_t j = 0; j < profiles[i].units(); ++j) {
      NodeDecision d;
      d.pruned_units = {j};
      units.emplace_back(predicted_loss(profiles[i], d), i, j);
    }
  }
  std::sort(units.begin(), units.end());
  recompute_bytes(r);
  for (const auto& [cost, i, j] : units) {
    if (r.bytes <= budget_bytes) break;
    if (static_cast<int64_t>(r.nodes[i].pruned_units.size()) + 1 >= profiles[i].units()) continue;
    r.nodes[i].pruned_units.push_back(j);
    std::sort(r.nodes[i].pruned_units.begin(), r.nodes[i].pruned_units.end());
    recompute_bytes(r);
  }
  if (r.bytes > budget_bytes)
    throw Error("int8-top-pruned: " + std::to_string(r.bytes) + " bytes after pruning, budget " + std::to_string(budget_bytes));
  r.budget_bytes = budget_bytes;
  return r;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

CompressionTask digits_mlp_task() { return {"digits-mlp", healthy_mlp, 200, kScenarioBatch, 1e-3}; }

namespace {

// A 784-h1-h2-10 ReLU MLP on Fashion-MNIST, 1,500 Adam steps.
CompressionTask fashion_mlp(const std::string& name, int64_t h1, int64_t h2) {
  return {name,
          [h1, h2] {
            return std::make_shared<SequentialModel>(nn::Sequential({{"fc1", nn::Linear(784, h1)},
                                                                     {"relu1", nn::ReLU()},
                                                                     {"fc2", nn::Linear(h1, h2)},
                                                                     {"relu2", nn::ReLU()},
                                                                     {"out", nn::Linear(h2, 10)}}));
          },
          1500, kScenarioBatch, 1e-3};
}

}  // namespace

CompressionTask fashion_mlp_task() { return fashion_mlp("fashion-mlp", 128, 64); }

CompressionTask fashion_wide_mlp_task() { return fashion_mlp("fashion-wide-mlp", 1024, 512); }

CompressionTask fashion_cnn_task() {
  return {"fashion-cnn", [] { return std::make_shared<FashionCnn>(); }, 600, kScenarioBatch, 2e-3};
}

double accuracy(ScenarioModel& model, const at::Tensor& x, const at::Tensor& y) {
  ::torch::NoGradGuard no_grad;
  model.eval();
  torch::Audit audit(model.audit_root());  // forward needs one; it measures nothing kept
  // In chunks small enough for malloc to reuse (a CNN's activations for 10,000 images take
  // hundreds of MB, and mmap-sized buffers page-fault afresh on every call).
  constexpr int64_t kChunk = 256;
  int64_t correct = 0;
  for (int64_t at = 0; at < x.size(0); at += kChunk) {
    const int64_t n = std::min(kChunk, x.size(0) - at);
    correct += model.forward(audit, x.narrow(0, at, n), 0).argmax(1).eq(y.narrow(0, at, n)).sum().item<int64_t>();
  }
  model.train();
  return x.size(0) ? static_cast<double>(correct) / static_cast<double>(x.size(0)) : 0.0;
}

Trained train_for_compression(const CompressionTask& task, const cli::Digits& data, uint64_t seed, RunSink* sink) {
  const int64_t n = data.x_train.defined() ? data.x_train.size(0) : 0;
  if (n < task.batch || !data.x_test.defined() || data.x_test.size(0) < 1)
    throw Error("compression task '" + task.name + "': " + std::to_string(n) + " training rows, a batch of " +
                std::to_string(task.batch) + " and a test set are needed");
  const auto start = std::chrono::steady_clock::now();
  ::torch::manual_seed(seed);
  Trained t;
  t.model = task.make();
  ::torch::optim::Adam optimizer(t.model->parameters(), ::torch::optim::AdamOptions(task.lr));
  torch::AuditOptions options = scenario_audit_options(*t.model);
  options.sink = sink;
  options.keep_steps = 0;  // the profile reads the whole run's records
  torch::Audit audit(t.model->audit_root(), options);
  at::Tensor order = at::randperm(n);
  int64_t cursor = 0;
  t.model->train();
  for (int step = 0; step < task.steps; ++step) {
    if (cursor + task.batch > n) {
      order = at::randperm(n);
      cursor = 0;
    }
    const at::Tensor idx = order.narrow(0, cursor, task.batch);
    cursor += task.batch;
    optimizer.zero_grad();
    const at::Tensor logits = t.model->forward(audit, data.x_train.index_select(0, idx), step);
    ::torch::nn::functional::cross_entropy(logits, data.y_train.index_select(0, idx)).backward();
    audit.step(optimizer);
  }
  audit.finish();
  t.profiles = compress::profile_model(*t.model->audit_root(), audit, task.batch);
  t.records = audit.records();
  t.report = audit.report();
  t.accuracy = accuracy(*t.model, data.x_test, data.y_test);
  t.seconds = ms_since(start) / 1000.0;
  return t;
}

namespace {

// The trained weights, put back when it goes out of scope: each measured variant starts from them.
class KeepWeights {
 public:
  explicit KeepWeights(ScenarioModel& model) : model_(model) {
    for (const at::Tensor& p : model.parameters()) saved_.push_back(p.detach().clone());
  }
  ~KeepWeights() {
    ::torch::NoGradGuard no_grad;
    std::size_t i = 0;
    for (at::Tensor& p : model_.parameters()) p.copy_(saved_[i++]);
  }
  KeepWeights(const KeepWeights&) = delete;
  KeepWeights& operator=(const KeepWeights&) = delete;

 private:
  ScenarioModel& model_;
  std::vector<at::Tensor> saved_;
};

}  // namespace

Measured measure(Trained& trained, const compress::Recipe& recipe, const cli::Digits& data, const std::string& budget,
                 const compress::InputGrams& grams) {
  KeepWeights keep(*trained.model);
  Measured m;
  m.method = recipe.method;
  m.budget = budget;
  m.recipe = recipe;
  m.predicted_loss = recipe.predicted_loss;
  const auto start = std::chrono::steady_clock::now();
  const compress::Applied applied = compress::apply(*trained.model->audit_root(), recipe, grams);
  m.apply_ms = ms_since(start);
  if (!grams.empty()) m.method += "-gptq";
  m.bytes = applied.bytes;
  m.accuracy = accuracy(*trained.model, data.x_test, data.y_test);
  return m;
}

double accuracy_loaded(Trained& trained, const std::string& packed, const cli::Digits& data) {
  KeepWeights keep(*trained.model);
  compress::load(*trained.model->audit_root(), packed);
  return accuracy(*trained.model, data.x_test, data.y_test);
}

compress::InputGrams calibration_grams(Trained& trained, const at::Tensor& x) {
  ::torch::NoGradGuard no_grad;
  trained.model->eval();
  std::map<std::string, at::Tensor> inputs;
  if (auto* cnn = dynamic_cast<FashionCnn*>(trained.model.get())) {
    inputs = cnn->node_inputs(x);
  } else if (auto* seq = dynamic_cast<SequentialModel*>(trained.model.get())) {
    // Child by child: each Linear's input is what the children before it made.
    const auto names = seq->net->named_children();
    at::Tensor h = x;
    std::size_t i = 0;
    for (auto& child : *seq->net) {
      if (child.ptr()->as<nn::Linear>()) inputs[names[i].key()] = h;
      h = child.forward<at::Tensor>(h);
      ++i;
    }
  } else {
    throw Error("calibration: no node inputs for this model");
  }
  trained.model->train();
  compress::InputGrams grams;
  for (const auto& [node, rows] : inputs) grams[node] = compress::input_gram(rows);
  return grams;
}

std::vector<Measured> compare_methods(Trained& trained, const cli::Digits& data) {
  using namespace compress;
  std::vector<Measured> out;
  const int64_t smallest = smallest_bytes(trained.profiles);
  // Error-minimising rounding's calibration batch: the first 512 training rows.
  const InputGrams grams =
      calibration_grams(trained, data.x_train.narrow(0, 0, std::min<int64_t>(512, data.x_train.size(0))));
  // At the size of each uniform precision (INT3 and INT2 are where the rule was once compared
  // only with pruning: uniform baselines reach there too).
  for (Precision p : {Precision::kInt8, Precision::kInt4, Precision::kInt3, Precision::kInt2}) {
    const std::string budget = precision_name(p);
    const Recipe uniform_r = uniform_recipe(trained.profiles, p);
    const Measured uniform = measure(trained, uniform_r, data, budget);
    out.push_back(uniform);
    out.push_back(measure(trained, uniform_r, data, budget, grams));
    if (uniform.bytes >= smallest) {
      const Budget b = Budget::bytes(uniform.bytes);
      for (RuleOptions o : {RuleOptions{}, RuleOptions{false, true}, RuleOptions{true, false}, RuleOptions{false, false}})
        out.push_back(measure(trained, make_recipe(trained.profiles, b, o), data, budget));
      out.push_back(measure(trained, make_recipe(trained.profiles, b), data, budget, grams));
    }
    for (Precision m : {Precision::kFp32, Precision::kInt8}) {
      Recipe r;
      try {
        r = magnitude_recipe(trained.profiles, m, uniform.bytes);
      } catch (const Error&) {
        continue;  // its bitmap and scales alone do not fit: no such baseline at this size
      }
      out.push_back(measure(trained, r, data, budget));
    }
    if (p == Precision::kInt4) out.push_back(measure(trained, int8_top_recipe(trained.profiles, uniform.bytes), data, budget));
  }
  return out;
}

MeasuredBound measured_max_loss(Trained& trained, const cli::Digits& data, double max_loss, uint64_t seed) {
  const int64_t n = data.x_test.size(0);
  if (n < 2) throw Error("measured maximum loss: " + std::to_string(n) + " test rows, 2 are needed to split");
  at::Generator gen = at::make_generator<at::CPUGeneratorImpl>(seed + 7919);  // not the split's own seed
  const at::Tensor order = at::randperm(n, gen, at::TensorOptions().dtype(at::kLong));
  const at::Tensor val = order.narrow(0, 0, n / 2), rep = order.narrow(0, n / 2, n - n / 2);
  const at::Tensor xv = data.x_test.index_select(0, val), yv = data.y_test.index_select(0, val);
  const at::Tensor xr = data.x_test.index_select(0, rep), yr = data.y_test.index_select(0, rep);
  ScenarioModel& model = *trained.model;
  MeasuredBound b;
  b.max_loss = max_loss;
  b.search = compress::search_max_loss(*model.audit_root(), trained.profiles, max_loss,
                                       [&] { return accuracy(model, xv, yv); });
  b.validation_loss = b.search.loss;
  const double fp32 = accuracy(model, xr, yr);
  cli::Digits report{data.x_train, data.y_train, xr, yr};
  const Measured m = measure(trained, b.search.recipe, report, "max-loss-measured");
  b.bytes = m.bytes;
  b.report_accuracy = m.accuracy;
  b.report_loss = fp32 - m.accuracy;
  return b;
}

}  // namespace gradscope::scenarios
