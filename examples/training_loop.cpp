// A training loop as people write it: loss scaling for mixed precision (by hand, with the
// overflow a float16 gradient has), gradient accumulation, a validation pass and a paused
// forward. The audit reports gradients unscaled, counts the steps skipped on overflow as
// LOSS_SCALE_OVERFLOW rather than NAN, and records neither the validation nor the paused pass.
// Built as build/examples/example_training_loop; docs/guide.md, "Your training loop".
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <iostream>

#include "gradscope/io/render/table.h"
#include "gradscope/torch/audit/audit.h"

int main() {
  namespace nn = torch::nn;
  torch::manual_seed(0);
  nn::Sequential net({{"fc1", nn::Linear(8, 16)}, {"act", nn::Tanh()}, {"fc2", nn::Linear(16, 1)}});
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.05));
  gradscope::torch::Audit audit(net);

  const at::Tensor x = torch::randn({256, 8});
  const at::Tensor y = x.sum(1, /*keepdim=*/true).sin();
  double scale = 1 << 30;  // too large at first: the first steps overflow, as with GradScaler
  for (int64_t step = 0; step < 60; ++step) {
    audit.set_loss_scale(scale);  // before the forward: the output gradients carry it
    optimizer.zero_grad();
    for (int64_t part = 0; part < 2; ++part) {  // accumulation: two micro-batches, one step
      at::Tensor out = audit.forward(net, x.narrow(0, part * 128, 128));
      // Under autocast this gradient would be float16: past 65504 it is inf.
      out.register_hook([](const at::Tensor& g) { return g.to(at::kHalf).to(at::kFloat); });
      (nn::functional::mse_loss(out, y.narrow(0, part * 128, 128)) * scale).backward();
    }
    bool finite = true;
    for (const at::Tensor& p : net->parameters()) finite = finite && p.grad().isfinite().all().item<bool>();
    audit.step([&] {
      if (!finite) return;  // skipped, as GradScaler skips: no parameter changes
      torch::NoGradGuard no_grad;
      for (at::Tensor& p : net->parameters()) p.grad().div_(scale);
      optimizer.step();
    });
    if (!finite) scale /= 2;
    if (step % 10 == 0) {
      torch::NoGradGuard no_grad;
      audit.forward(net, x);  // a validation pass: not recorded
    }
    {
      gradscope::torch::Audit::Pause pause(audit);
      audit.forward(net, x);  // a forward for logging, with gradients on: paused, not recorded
    }
  }

  const gradscope::Report result = audit.report();
  std::cout << gradscope::render_table(result);
  std::cout << "steps skipped on overflow: " << result.loss_scale.skipped << ", loss scale now " << scale << "\n";
  return result.healthy() ? 0 : 1;
}
