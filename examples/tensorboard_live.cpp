// TensorBoard while training: every audited step goes to the run store (gradscope report,
// html, export later) and to a TensorBoard event file, through one sink pointer. Built as
// build/examples/example_tensorboard_live; then `tensorboard --logdir runs/tb-example/tb`
// (docs/tensorboard.md).
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <iostream>

#include "gradscope/core/audit/tee_sink.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/tensorboard/tensorboard_sink.h"
#include "gradscope/torch/audit/audit.h"

int main() {
  namespace nn = torch::nn;
  torch::manual_seed(0);
  nn::Sequential net({{"fc1", nn::Linear(8, 16)}, {"act", nn::Tanh()}, {"fc2", nn::Linear(16, 1)}});
  torch::optim::SGD optimizer(net->parameters(), torch::optim::SGDOptions(0.05));

  gradscope::torch::AuditOptions options;
  // Per-channel statistics every 10th step: TensorBoard's histograms are built from them
  // (the records hold one summary per tensor, not its elements).
  options.channels_all_nodes = gradscope::torch::ChannelView{};
  gradscope::RunWriterOptions store;
  store.overwrite = true;
  store.thresholds = options.thresholds;
  gradscope::RunWriter run("runs/tb-example", store);
  gradscope::tensorboard::TensorBoardSinkOptions tb_options;
  tb_options.thresholds = options.thresholds;  // the flag/* scalars then agree with the report
  gradscope::tensorboard::TensorBoardSink tb("runs/tb-example/tb", tb_options);
  gradscope::TeeSink both({&run, &tb});
  options.sink = &both;
  gradscope::torch::Audit audit(net, options);

  const at::Tensor x = torch::randn({256, 8});
  const at::Tensor y = x.sum(1, /*keepdim=*/true).sin();
  for (int64_t step = 0; step < 100; ++step) {
    optimizer.zero_grad();
    nn::functional::mse_loss(audit.forward(net, x), y).backward();
    audit.step(optimizer);
  }
  audit.finish();  // the summary: the findings text in TensorBoard, the architecture in the store
  run.close();
  if (!tb.close()) {
    std::cerr << "tensorboard: " << tb.error() << "\n";
    return 1;
  }
  std::cout << "run: runs/tb-example\nevents: " << tb.path() << "\n";
  return 0;
}
