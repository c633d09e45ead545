// The C++ side of the Python tests: what the C++ audit says on the same models, so pytest can
// check that Python gets the same numbers and the same flags.
//
//   cpp_reference parity SEED STEPS           one JSON record per line, of a seeded MLP
//   cpp_reference parity-scoped SEED STEPS    the same, of a nested model with a scoped node
//   cpp_reference scenarios DIGITS STEPS NAME...   {"name": {"node": ["FLAG", ...]}, ...}
//   cpp_reference apply RECIPE IN OUT         the parity MLP with IN's weights (raw float32, in
//                                             named_parameters order), compress::apply'd, to OUT
//   cpp_reference sampler KIND LOOKUPS...     per LOOKUPS file, one line: an EmbeddingTracker's
//                                             report on its lookups with a KIND (uniform|popularity)
//                                             sampler
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>

#include <ATen/ATen.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "gradscope/core/error.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/embedding/json.h"
#include "gradscope/torch/compress/apply_recipe.h"
#include "gradscope/torch/audit/audit.h"
#include "gradscope/torch/embedding/tracker.h"
#include "scenario.h"

namespace nn = ::torch::nn;
using namespace gradscope;

namespace {

void print_records(const gradscope::torch::Audit& audit);

nn::Sequential parity_mlp() {
  return nn::Sequential({{"fc1", nn::Linear(16, 32)},
                         {"tanh", nn::Tanh()},
                         {"fc2", nn::Linear(32, 32)},
                         {"relu", nn::ReLU()},
                         {"out", nn::Linear(32, 4)}});
}

// Fc1 -> tanh -> fc2 -> relu -> out, SGD lr 0.1, inputs and targets from the same seed: the
// model tests/python/test_parity.py builds in PyTorch.
int parity(uint64_t seed, int steps) {
  ::torch::manual_seed(seed);
  nn::Sequential net = parity_mlp();
  ::torch::optim::SGD opt(net->parameters(), ::torch::optim::SGDOptions(0.1));
  gradscope::torch::Audit audit(net);
  for (int step = 0; step < steps; ++step) {
    const at::Tensor x = at::randn({8, 16}) * 3;
    const at::Tensor y = at::randn({8, 4});
    opt.zero_grad();
    audit.forward(net, x).sub(y).pow(2).mean().backward();
    audit.step(opt);
  }
  print_records(audit);
  return 0;
}

// A model of enc (a Sequential: a -> tanh -> b) and out, run as out(relu(enc(x))), with enc
// scoped to {"a", "b"}: the model tests/python/test_scopes.py builds in PyTorch. LibTorch has
// no hooks, so the submodules are tapped here where Python's forward hooks tap them.
struct ScopedNet : nn::Module {
  nn::Sequential enc{{"a", nn::Linear(16, 32)}, {"act", nn::Tanh()}, {"b", nn::Linear(32, 32)}};
  nn::Linear out{nullptr};
  ScopedNet() {
    register_module("enc", enc);
    out = register_module("out", nn::Linear(32, 4));
  }
};

int parity_scoped(uint64_t seed, int steps) {
  ::torch::manual_seed(seed);
  auto net = std::make_shared<ScopedNet>();
  auto& enc = net->enc;
  auto& out = net->out;
  ::torch::optim::SGD opt(net->parameters(), ::torch::optim::SGDOptions(0.1));
  gradscope::torch::AuditOptions options;
  options.scopes["enc"] = gradscope::torch::NodeScope::matching({"a", "b"});
  gradscope::torch::Audit audit(std::static_pointer_cast<nn::Module>(net), options);
  for (int step = 0; step < steps; ++step) {
    const at::Tensor x = at::randn({8, 16}) * 3;
    const at::Tensor y = at::randn({8, 4});
    opt.zero_grad();
    // In enc's Sequential the Tanh after a belongs to a: a's activation is the tanh's output,
    // and a's own output its pre-activation (what the Python hooks record).
    const at::Tensor a_out = enc[0]->as<nn::Linear>()->forward(x);
    audit.record_pre_activation("enc/a", a_out);
    const at::Tensor a = audit.tap("enc/a", a_out.tanh());
    const at::Tensor e = audit.tap("enc", audit.tap("enc/b", enc[2]->as<nn::Linear>()->forward(a)));
    audit.tap("out", out->forward(e.relu())).sub(y).pow(2).mean().backward();
    audit.step(opt);
  }
  print_records(audit);
  return 0;
}

void print_records(const gradscope::torch::Audit& audit) {
  for (const Record& r : audit.records())
    std::printf(
        "{\"step\":%lld,\"node\":\"%s\",\"site\":\"%s\",\"count\":%lld,\"zero\":%lld,\"saturated\":%lld,"
        "\"sum\":%.17g,\"sum_sq\":%.17g,\"sum_abs\":%.17g,\"min\":%.17g,\"max\":%.17g}\n",
        static_cast<long long>(r.step), r.node.c_str(), site_name(r.site), static_cast<long long>(r.stats.count),
        static_cast<long long>(r.stats.zero), static_cast<long long>(r.stats.saturated), r.stats.sum,
        r.stats.sum_sq, r.stats.sum_abs, r.stats.min, r.stats.max);
}

// The weights come from Python byte for byte, so the comparison does not rest on both sides
// initialising alike; prints {"bytes": N, "fp32_bytes": M} of compress::apply.
int apply_recipe(const std::string& recipe_path, const std::string& in, const std::string& out) {
  nn::Sequential net = parity_mlp();
  const compress::Recipe recipe = load_recipe(recipe_path);
  std::ifstream src(in, std::ios::binary);
  ::torch::NoGradGuard no_grad;
  for (at::Tensor& p : net->parameters()) {
    src.read(static_cast<char*>(p.data_ptr()), static_cast<std::streamsize>(p.numel() * sizeof(float)));
    if (!src) throw Error("cannot read the weights from '" + in + "'");
  }
  const compress::Applied a = compress::apply(*net, recipe);
  std::ofstream dst(out, std::ios::binary);
  for (const at::Tensor& p : net->parameters())
    dst.write(static_cast<const char*>(p.data_ptr()), static_cast<std::streamsize>(p.numel() * sizeof(float)));
  if (!dst.flush()) throw Error("cannot write '" + out + "'");
  std::printf("{\"bytes\":%lld,\"fp32_bytes\":%lld}\n", static_cast<long long>(a.bytes),
              static_cast<long long>(a.fp32_bytes));
  return 0;
}

// LOOKUPS: "ROWS DIM" then per step lines "L id..." (lookups), "N id..." (negatives) and "S"
// (the step ends; no gradient, the weights do not change). Prints the tracker's report JSON.
int sampler_report(const std::string& kind, const std::string& path) {
  std::ifstream in(path);
  int64_t rows = 0, dim = 0;
  if (!(in >> rows >> dim)) throw Error("cannot read '" + path + "'");
  gradscope::torch::EmbeddingTrackerOptions options;
  if (kind == "popularity") options.negative_sampler.kind = NegativeSampler::Kind::kPopularity;
  nn::Embedding table(rows, dim);
  gradscope::torch::EmbeddingTracker tracker(table, "item", options);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string tag;
    if (!(words >> tag)) continue;
    if (tag == "S") {
      tracker.step([] {});
      continue;
    }
    std::vector<int64_t> ids;
    for (int64_t id; words >> id;) ids.push_back(id);
    tracker.observe(at::tensor(ids, at::kLong),
                    tag == "N" ? gradscope::torch::Role::kNegative : gradscope::torch::Role::kLookup);
  }
  std::printf("%s\n", render_embedding_json(tracker.report(), /*indent=*/-1).c_str());
  return 0;
}

int scenarios_flags(const std::string& digits, int steps, int argc, char** argv) {
  const cli::Digits data = cli::load_digits(digits, 0.2, 7, scenarios::kScenarioBatch);
  std::printf("{");
  for (int i = 0; i < argc; ++i) {
    const scenarios::ScenarioRun run = scenarios::run_scenario(scenarios::scenario(argv[i]), data, steps, 7);
    std::printf("%s\"%s\":{", i ? "," : "", argv[i]);
    for (std::size_t n = 0; n < run.report.nodes.size(); ++n) {
      const NodeReport& node = run.report.nodes[n];
      std::printf("%s\"%s\":[", n ? "," : "", node.node.c_str());
      const std::vector<Flag> flags = node.flags.list();
      for (std::size_t f = 0; f < flags.size(); ++f) std::printf("%s\"%s\"", f ? "," : "", flag_name(flags[f]));
      std::printf("]");
    }
    std::printf("}");
  }
  std::printf("}\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "parity" && argc == 4) return parity(std::strtoull(argv[2], nullptr, 10), std::atoi(argv[3]));
    if (mode == "parity-scoped" && argc == 4)
      return parity_scoped(std::strtoull(argv[2], nullptr, 10), std::atoi(argv[3]));
    if (mode == "apply" && argc == 5) return apply_recipe(argv[2], argv[3], argv[4]);
    if (mode == "sampler" && argc >= 4) {
      for (int i = 3; i < argc; ++i) sampler_report(argv[2], argv[i]);
      return 0;
    }
    if (mode == "scenarios" && argc >= 5) return scenarios_flags(argv[2], std::atoi(argv[3]), argc - 4, argv + 4);
    std::cerr << "usage: cpp_reference parity|parity-scoped SEED STEPS | scenarios DIGITS STEPS NAME... | apply "
                 "RECIPE IN OUT | sampler uniform|popularity LOOKUPS...\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "cpp_reference: error: " << e.what() << "\n";
    return 3;
  }
}
