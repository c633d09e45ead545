// make bench-audit: training-step time of an MLP (4 hidden layers x 1024, batch 256, Adam) on
// the CPU without the audit, with the audit every step (all nodes, activations tapped), and
// with the audit every 10th step. The three train from identical weights in one process, one
// step each in turn; each cycle of 10 such rounds gives paired ratios (every / plain, every-10th
// / plain), so machine drift cancels; the medians over cycles are reported. Last line: JSON.
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <vector>

#include "gradscope/torch/audit.h"

namespace {

namespace nn = ::torch::nn;

constexpr int64_t kInput = 64, kHidden = 1024, kClasses = 10, kBatch = 256;

nn::Sequential make_mlp() {
  ::torch::manual_seed(0);
  nn::Sequential net;
  int64_t in = kInput;
  for (int i = 0; i < 4; ++i) {
    net->push_back("fc" + std::to_string(i), nn::Linear(in, kHidden));
    net->push_back("relu" + std::to_string(i), nn::ReLU());
    in = kHidden;
  }
  net->push_back("out", nn::Linear(in, kClasses));
  return net;
}

struct Trainer {
  nn::Sequential net = make_mlp();
  ::torch::optim::Adam optimizer{net->parameters(), ::torch::optim::AdamOptions(1e-3)};
  std::unique_ptr<gradscope::torch::Audit> audit;

  explicit Trainer(int sample_every) {
    if (sample_every > 0) {
      gradscope::torch::AuditOptions o;
      o.sample_every = sample_every;
      o.keep_records = false;  // a long run would persist records through on_step instead
      audit = std::make_unique<gradscope::torch::Audit>(net, o);
    }
  }
  double step(const at::Tensor& x, const at::Tensor& y) {
    const auto t0 = std::chrono::steady_clock::now();
    optimizer.zero_grad();
    const at::Tensor logits = audit ? audit->forward(net, x) : net->forward(x);
    nn::functional::cross_entropy(logits, y).backward();
    if (audit) audit->step(optimizer);
    else optimizer.step();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main() {
  constexpr int kCycles = 20, kStepsPerCycle = 10;  // a cycle holds one audited sample-10 step
  Trainer plain(0), every(1), sample10(10);
  at::manual_seed(1);
  const at::Tensor x = at::randn({kBatch, kInput});
  const at::Tensor y = at::randint(0, kClasses, {kBatch});
  for (Trainer* t : {&plain, &every, &sample10})
    for (int i = 0; i < kStepsPerCycle; ++i) t->step(x, y);  // warm-up, keeps the phase

  std::vector<double> t_plain, t_every, t_sample, r_every, r_sample;
  for (int c = 0; c < kCycles; ++c) {
    double cycle_plain = 0, cycle_every = 0, cycle_sample = 0;
    for (int s = 0; s < kStepsPerCycle; ++s) {
      cycle_plain += plain.step(x, y);
      cycle_every += every.step(x, y);
      cycle_sample += sample10.step(x, y);
    }
    t_plain.push_back(cycle_plain / kStepsPerCycle);
    t_every.push_back(cycle_every / kStepsPerCycle);
    t_sample.push_back(cycle_sample / kStepsPerCycle);
    r_every.push_back(cycle_every / cycle_plain);
    r_sample.push_back(cycle_sample / cycle_plain);
  }
  const double r1 = median(r_every), r10 = median(r_sample);
  std::printf("MLP 64-4x1024-10, batch %lld, Adam; %d cycles of %d steps per side, steps interleaved\n",
              static_cast<long long>(kBatch), kCycles, kStepsPerCycle);
  std::printf("step ms (median of cycle means): plain %.2f  audit every step %.2f  every 10th %.2f\n",
              median(t_plain) * 1e3, median(t_every) * 1e3, median(t_sample) * 1e3);
  std::printf("{\"bench\":\"audit_overhead\",\"ratio_every_step\":%.4f,\"ratio_sample10\":%.4f}\n", r1, r10);
  return 0;
}
