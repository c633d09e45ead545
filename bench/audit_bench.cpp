// make bench-audit: training-step time of an MLP (4 hidden layers x 1024, batch 256, Adam) on
// the CPU without the audit, with the audit every step (all nodes, activations tapped), and
// with the audit every 10th step. The three run in interleaved blocks of steps in one process,
// from identical initial weights; medians of per-step times are compared. Last line: JSON.
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
  constexpr int kBlocks = 8, kStepsPerBlock = 20;  // blocks of 20 steps: two full sample-10 cycles
  Trainer plain(0), every(1), sample10(10);
  at::manual_seed(1);
  const at::Tensor x = at::randn({kBatch, kInput});
  const at::Tensor y = at::randint(0, kClasses, {kBatch});
  for (Trainer* t : {&plain, &every, &sample10})
    for (int i = 0; i < 3; ++i) t->step(x, y);  // warm-up

  std::vector<double> t_plain, t_every, t_sample;
  for (int b = 0; b < kBlocks; ++b) {
    double block_plain = 0, block_every = 0, block_sample = 0;
    for (int s = 0; s < kStepsPerBlock; ++s) block_plain += plain.step(x, y);
    for (int s = 0; s < kStepsPerBlock; ++s) block_every += every.step(x, y);
    for (int s = 0; s < kStepsPerBlock; ++s) block_sample += sample10.step(x, y);
    t_plain.push_back(block_plain / kStepsPerBlock);
    t_every.push_back(block_every / kStepsPerBlock);
    t_sample.push_back(block_sample / kStepsPerBlock);
  }
  const double base = median(t_plain), r1 = median(t_every) / base, r10 = median(t_sample) / base;
  std::printf("MLP 64-4x1024-10, batch %lld, Adam, %d torch threads; %d blocks of %d steps each\n",
              static_cast<long long>(kBatch), at::get_num_threads(), kBlocks, kStepsPerBlock);
  std::printf("step ms (median of block means): plain %.2f  audit every step %.2f  every 10th %.2f\n",
              base * 1e3, median(t_every) * 1e3, median(t_sample) * 1e3);
  std::printf("{\"bench\":\"audit_overhead\",\"ratio_every_step\":%.4f,\"ratio_sample10\":%.4f}\n", r1, r10);
  return 0;
}
