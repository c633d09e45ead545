// make bench-audit: training-step time with and without the audit, on the CPU, three cases.
//   1. A ReLU MLP (4 hidden layers x 1024, batch 256, Adam): no audit, the audit every step
//      (all nodes, activations tapped), and every 10th step -> ratio_every_step, ratio_sample10;
//      the instrumented Adam (gradscope/torch/optim/adam.h) alone and audited every step, against
//      LibTorch's Adam without audit -> ratio_instrumented_adam, ratio_every_step_instrumented.
//   2. The same MLP with Tanh: no audit against the audit every step with everything on (the
//      pre-activation pass, a RunWriter attached, channel views every 10 steps)
//      -> ratio_every_step_full.
//   3. The demo's digits MLP (64-64-32-10 ReLU, batch 64, Adam; random inputs of the digits'
//      shape): no audit against every step -> ratio_every_step_small.
//   Cases 2 and 3 also audit with the instrumented Adam -> ..._instrumented.
//   4. Case 1's MLP with AdamW and with SGD (momentum 0.9): LibTorch's audited every step,
//      gradscope's alone and audited -> ratio_every_step_<optim>, ratio_instrumented_<optim>,
//      ratio_every_step_instrumented_<optim>, each against LibTorch's optimizer without audit.
// The arms of a case train from identical weights in one process, one step each in turn; each
// cycle gives paired ratios, so machine drift cancels; the medians over cycles are reported.
// glibc is told to keep freed memory (mallopt below): LibTorch frees and re-allocates
// multi-MB temporaries every step (Adam's), glibc hands them back to the kernel, and the
// next allocation faults their pages in again, which on this VM was 70% of a plain step
// (110 ms against 36) and landed on whichever arm allocated next: the ratios swung by +-0.05.
// BENCH_CYCLES overrides the cycle count; BENCH_ONLY=relu|full|small runs one case; BENCH_PARTS=1
// adds the full case taken apart (pre-activations only, + channel views, + the RunWriter);
// BENCH_PROFILE=N steps only the audited arms N times each, for a profiler. Last line: JSON.
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>

#include <ATen/ATen.h>

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "gradscope/io/store/run_writer.h"
#include "gradscope/torch/audit/audit.h"
#include "gradscope/torch/optim/adam.h"
#include "gradscope/torch/optim/sgd.h"

namespace {

namespace nn = ::torch::nn;

struct Shape {
  int64_t input, classes, batch;
};

// 64-1024-1024-1024-1024-10 (3.2M parameters).
nn::Sequential make_mlp(bool tanh) {
  ::torch::manual_seed(0);
  nn::Sequential net;
  int64_t in = 64;
  for (int i = 0; i < 4; ++i) {
    net->push_back("fc" + std::to_string(i), nn::Linear(in, 1024));
    if (tanh) net->push_back("act" + std::to_string(i), nn::Tanh());
    else net->push_back("act" + std::to_string(i), nn::ReLU());
    in = 1024;
  }
  net->push_back("out", nn::Linear(in, 10));
  return net;
}

// The demo's digits MLP (src/scenarios/controls.cpp, healthy_mlp).
nn::Sequential make_digits_mlp() {
  ::torch::manual_seed(0);
  return nn::Sequential({{"fc1", nn::Linear(64, 64)}, {"relu1", nn::ReLU()}, {"fc2", nn::Linear(64, 32)},
                         {"relu2", nn::ReLU()}, {"out", nn::Linear(32, 10)}});
}

// The optimizers the arms train with: LibTorch's, or gradscope's instrumented one.
enum class Optim { kAdam, kAdamW, kSgdMomentum };

std::unique_ptr<::torch::optim::Optimizer> make_optimizer(Optim kind, bool instrumented,
                                                          const std::vector<at::Tensor>& params) {
  switch (kind) {
    case Optim::kAdamW: {
      const auto o = ::torch::optim::AdamWOptions(1e-3);
      if (instrumented) return std::make_unique<gradscope::torch::AdamW>(params, o);
      return std::make_unique<::torch::optim::AdamW>(params, o);
    }
    case Optim::kSgdMomentum: {
      const auto o = ::torch::optim::SGDOptions(1e-2).momentum(0.9);
      if (instrumented) return std::make_unique<gradscope::torch::SGD>(params, o);
      return std::make_unique<::torch::optim::SGD>(params, o);
    }
    case Optim::kAdam:
      break;
  }
  const auto o = ::torch::optim::AdamOptions(1e-3);
  if (instrumented) return std::make_unique<gradscope::torch::Adam>(params, o);
  return std::make_unique<::torch::optim::Adam>(params, o);
}

struct Trainer {
  nn::Sequential net;
  std::unique_ptr<::torch::optim::Optimizer> optimizer;
  std::unique_ptr<gradscope::RunWriter> writer;
  std::unique_ptr<gradscope::torch::Audit> audit;

  Trainer(nn::Sequential model, const gradscope::torch::AuditOptions* options, const std::string& run_dir = {},
          bool instrumented = false, Optim kind = Optim::kAdam)
      : net(std::move(model)), optimizer(make_optimizer(kind, instrumented, net->parameters())) {
    if (!options) return;
    gradscope::torch::AuditOptions o = *options;
    if (!run_dir.empty()) {
      gradscope::RunWriterOptions w;
      w.overwrite = true;
      writer = std::make_unique<gradscope::RunWriter>(run_dir, w);
      o.sink = writer.get();  // every audited step's records and channel records
    }
    audit = std::make_unique<gradscope::torch::Audit>(net, o);
  }
  double step(const at::Tensor& x, const at::Tensor& y) {
    const auto t0 = std::chrono::steady_clock::now();
    optimizer->zero_grad();
    const at::Tensor logits = audit ? audit->forward(net, x) : net->forward(x);
    nn::functional::cross_entropy(logits, y).backward();
    if (audit) audit->step(*optimizer);
    else optimizer->step();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::max(1, std::atoi(v)) : fallback;
}

bool wanted(const char* name) {
  const char* only = std::getenv("BENCH_ONLY");
  return !only || !*only || std::string(only) == name;
}

// Steps every arm once per round, `steps` rounds a cycle; returns each arm's median step time
// and, for arms 1.., the median over cycles of (arm cycle time / arm 0 cycle time).
struct Result {
  std::vector<double> step_s, ratio;
};
Result interleave(std::vector<Trainer*> arms, const Shape& shape, int cycles, int steps) {
  at::manual_seed(1);
  const at::Tensor x = at::randn({shape.batch, shape.input});
  const at::Tensor y = at::randint(0, shape.classes, {shape.batch});
  if (const int profile = env_int("BENCH_PROFILE", 0)) {  // no ratios: the audited arms only
    for (int i = 0; i < profile; ++i)
      for (std::size_t a = 1; a < arms.size(); ++a) arms[a]->step(x, y);
    return {std::vector<double>(arms.size(), 0.0), std::vector<double>(arms.size(), 0.0)};
  }
  for (Trainer* t : arms)
    for (int i = 0; i < steps; ++i) t->step(x, y);  // warm-up, keeps the sampling phase
  std::vector<std::vector<double>> times(arms.size()), ratios(arms.size());
  for (int c = 0; c < cycles; ++c) {
    std::vector<double> cycle(arms.size(), 0.0);
    for (int s = 0; s < steps; ++s)
      for (std::size_t a = 0; a < arms.size(); ++a) cycle[a] += arms[a]->step(x, y);
    for (std::size_t a = 0; a < arms.size(); ++a) {
      times[a].push_back(cycle[a] / steps);
      ratios[a].push_back(cycle[a] / cycle[0]);
    }
  }
  Result r;
  for (std::size_t a = 0; a < arms.size(); ++a) {
    r.step_s.push_back(median(times[a]));
    r.ratio.push_back(median(ratios[a]));
  }
  return r;
}

}  // namespace

int main() {
  // Freed memory stays in the process for both arms (see the top): no per-step page faults.
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  const int cycles = env_int("BENCH_CYCLES", 20);
  std::string json = "{\"bench\":\"audit_overhead\"";
  char buf[256];

  if (wanted("relu")) {
    const Shape relu{64, 10, 256};
    gradscope::torch::AuditOptions every, sample10;
    sample10.sample_every = 10;
    Trainer plain(make_mlp(false), nullptr), a1(make_mlp(false), &every), a10(make_mlp(false), &sample10);
    // The instrumented Adam (gradscope/torch/optim/adam.h) alone, and audited every step.
    Trainer fused(make_mlp(false), nullptr, {}, true), fused_a1(make_mlp(false), &every, {}, true);
    const Result r = interleave({&plain, &a1, &a10, &fused, &fused_a1}, relu, cycles, 10);
    std::printf("ReLU MLP 64-4x1024-10, batch 256, Adam; %d cycles of 10 steps per arm, steps interleaved\n", cycles);
    std::printf("step ms (median of cycle means): plain %.2f  audit every step %.2f  every 10th %.2f  "
                "instrumented Adam %.2f  instrumented Adam + audit every step %.2f\n",
                r.step_s[0] * 1e3, r.step_s[1] * 1e3, r.step_s[2] * 1e3, r.step_s[3] * 1e3, r.step_s[4] * 1e3);
    std::snprintf(buf, sizeof buf,
                  ",\"ratio_every_step\":%.4f,\"ratio_sample10\":%.4f,\"ratio_instrumented_adam\":%.4f,"
                  "\"ratio_every_step_instrumented\":%.4f",
                  r.ratio[1], r.ratio[2], r.ratio[3], r.ratio[4]);
    json += buf;
  }
  if (wanted("optimizers")) {  // AdamW and SGD with momentum: LibTorch's audited, gradscope's audited
    const Shape relu{64, 10, 256};
    gradscope::torch::AuditOptions every;
    for (const Optim kind : {Optim::kAdamW, Optim::kSgdMomentum}) {
      const char* name = kind == Optim::kAdamW ? "adamw" : "sgd_momentum";
      Trainer plain(make_mlp(false), nullptr, {}, false, kind), a1(make_mlp(false), &every, {}, false, kind),
          fused(make_mlp(false), nullptr, {}, true, kind), fused_a1(make_mlp(false), &every, {}, true, kind);
      const Result r = interleave({&plain, &a1, &fused, &fused_a1}, relu, cycles, 10);
      std::printf("ReLU MLP, %s: step ms plain %.2f  audit every step %.2f  instrumented %.2f  instrumented + "
                  "audit every step %.2f\n",
                  name, r.step_s[0] * 1e3, r.step_s[1] * 1e3, r.step_s[2] * 1e3, r.step_s[3] * 1e3);
      std::snprintf(buf, sizeof buf,
                    ",\"ratio_every_step_%s\":%.4f,\"ratio_instrumented_%s\":%.4f,"
                    "\"ratio_every_step_instrumented_%s\":%.4f",
                    name, r.ratio[1], name, r.ratio[2], name, r.ratio[3]);
      json += buf;
    }
  }
  if (wanted("full")) {
    const Shape tanh{64, 10, 256};
    gradscope::torch::AuditOptions full;
    full.channels_all_nodes = gradscope::torch::ChannelView{1, 10, {}};
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("gradscope-bench-audit-" + std::to_string(::getpid()));
    {
      Trainer plain(make_mlp(true), nullptr), all(make_mlp(true), &full, dir.string()),
          all_fused(make_mlp(true), &full, dir.string() + "-instrumented", true);
      const Result r = interleave({&plain, &all, &all_fused}, tanh, cycles, 10);
      std::printf("Tanh MLP 64-4x1024-10, batch 256, Adam; audit every step with pre-activations, a RunWriter, "
                  "channel views every 10 steps; %d cycles of 10 steps per arm\n", cycles);
      std::printf("step ms (median of cycle means): plain %.2f  audit, everything on %.2f  the same with the "
                  "instrumented Adam %.2f\n",
                  r.step_s[0] * 1e3, r.step_s[1] * 1e3, r.step_s[2] * 1e3);
      std::snprintf(buf, sizeof buf, ",\"ratio_every_step_full\":%.4f,\"ratio_every_step_full_instrumented\":%.4f",
                    r.ratio[1], r.ratio[2]);
      json += buf;
    }
    if (std::getenv("BENCH_PARTS")) {  // where the full case's cost goes, one option added per arm
      gradscope::torch::AuditOptions bare, channels = full;
      Trainer plain(make_mlp(true), nullptr), a(make_mlp(true), &bare), b(make_mlp(true), &channels),
          c(make_mlp(true), &full, dir.string());
      const Result r = interleave({&plain, &a, &b, &c}, tanh, cycles, 10);
      std::printf("parts, ratio to plain: audit with pre-activations %.4f  + channel views %.4f  + RunWriter %.4f\n",
                  r.ratio[1], r.ratio[2], r.ratio[3]);
    }
    std::filesystem::remove_all(dir);
    std::filesystem::remove_all(dir.string() + "-instrumented");
  }
  if (wanted("small")) {
    const Shape digits{64, 10, 64};
    gradscope::torch::AuditOptions every;
    Trainer plain(make_digits_mlp(), nullptr), a1(make_digits_mlp(), &every),
        a1_fused(make_digits_mlp(), &every, {}, true);
    const int small_cycles = cycles * 5;
    const Result r = interleave({&plain, &a1, &a1_fused}, digits, small_cycles, 20);
    std::printf("digits MLP 64-64-32-10, batch 64, Adam; %d cycles of 20 steps per arm\n", small_cycles);
    std::printf("step ms (median of cycle means): plain %.3f  audit every step %.3f  with the instrumented Adam %.3f\n",
                r.step_s[0] * 1e3, r.step_s[1] * 1e3, r.step_s[2] * 1e3);
    std::snprintf(buf, sizeof buf, ",\"ratio_every_step_small\":%.4f,\"ratio_every_step_small_instrumented\":%.4f",
                  r.ratio[1], r.ratio[2]);
    json += buf;
  }
  std::printf("%s}\n", json.c_str());
  return 0;
}
