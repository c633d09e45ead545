// The audit in the training loops people write: evaluation passes, pauses, forwards run again
// inside backward (activation checkpointing), loss scaling for mixed precision with skipped
// steps, and an optimizer of another model. Ground truth comes from LibTorch or from a second
// run of the same model without the feature.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <limits>

#include "audit_test_util.h"
#include "gradscope/core/error.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

namespace nn = ::torch::nn;
using ::testing::HasSubstr;

using audit_test::mlp;
using audit_test::node_of;
using audit_test::of;

int64_t total_count(const std::vector<Record>& rs, Site site) {
  int64_t n = 0;
  for (const Record& r : rs)
    if (r.site == site) n += r.stats.count;
  return n;
}

// One training step on a batch of `batch` rows: forward, backward of sum(y^2), step.
void train_step(Audit& audit, nn::Sequential& net, ::torch::optim::SGD& opt, int64_t batch = 4) {
  opt.zero_grad();
  audit.forward(net, at::randn({batch, 6})).pow(2).sum().backward();
  audit.step(opt);
}

TEST(AuditTrainingLoop, ForwardWithoutGradientsIsNotRecorded) {
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.01);
  Audit audit(net);
  for (int step = 0; step < 3; ++step) {
    opt.zero_grad();
    audit.forward(net, at::randn({4, 6})).pow(2).sum().backward();
    {
      ::torch::NoGradGuard no_grad;  // a validation pass on a larger batch
      audit.forward(net, at::randn({50, 6}));
    }
    audit.step(opt);
  }
  {
    ::torch::NoGradGuard no_grad;  // a final validation after the last step
    audit.forward(net, at::randn({50, 6}));
  }
  const auto rs = audit.records();
  // Three training forwards of 4 rows: fc1's group is 4x8, fc2's 4x3.
  EXPECT_EQ(total_count(of(rs, "fc1", Site::kActivation), Site::kActivation), 3 * 4 * 8);
  EXPECT_EQ(total_count(of(rs, "fc2", Site::kActivation), Site::kActivation), 3 * 4 * 3);
  EXPECT_EQ(audit.report().steps, 3);  // the last validation is not a step of its own
}

TEST(AuditTrainingLoop, ModulesInEvalModeAreNotRecorded) {
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.01);
  Audit audit(net);
  train_step(audit, net, opt);
  net->eval();  // gradients still enabled: only the mode says this is evaluation
  audit.forward(net, at::randn({50, 6})).sum().backward();
  net->train();
  opt.zero_grad();
  const auto rs = audit.records();
  EXPECT_EQ(total_count(of(rs, "fc1", Site::kActivation), Site::kActivation), 4 * 8);
  EXPECT_EQ(total_count(of(rs, "fc1", Site::kOutputGrad), Site::kOutputGrad), 4 * 8);
}

TEST(AuditTrainingLoop, PausedForwardsAreNotRecordedAndPausesNest) {
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.01);
  Audit audit(net);
  opt.zero_grad();
  audit.forward(net, at::randn({4, 6})).pow(2).sum().backward();
  {
    Audit::Pause pause(audit);
    {
      Audit::Pause inner(audit);
      audit.forward(net, at::randn({9, 6}));
    }
    EXPECT_TRUE(audit.paused());  // the outer pause still holds
    audit.forward(net, at::randn({9, 6}));
  }
  EXPECT_FALSE(audit.paused());
  audit.step(opt);  // measured as usual
  const auto rs = audit.records();
  EXPECT_EQ(total_count(of(rs, "fc1", Site::kActivation), Site::kActivation), 4 * 8);
  EXPECT_EQ(of(rs, "fc1", Site::kParamGrad).size(), 1u);
  EXPECT_EQ(of(rs, "fc1", Site::kUpdate).size(), 1u);
  try {
    audit.resume();
    FAIL() << "resume() without pause() must throw";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("resume() without a pause()"));
  }
}

// A forward run again inside backward (what activation checkpointing does): recorded once.
TEST(AuditTrainingLoop, ForwardInsideBackwardIsRecordedOnce) {
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.01);
  Audit audit(net);
  opt.zero_grad();
  const at::Tensor x = at::randn({4, 6});
  at::Tensor y = audit.forward(net, x);
  int recomputed = 0;
  y.register_hook([&](const at::Tensor&) {
    audit.forward(net, x);  // non-reentrant checkpointing: recorded in the first forward already
    ++recomputed;
  });
  y.pow(2).sum().backward();
  audit.step(opt);
  ASSERT_EQ(recomputed, 1);
  const auto rs = audit.records();
  EXPECT_EQ(total_count(of(rs, "fc1", Site::kActivation), Site::kActivation), 4 * 8);
}

// Reentrant checkpointing: the first forward runs without gradients, the recomputation
// inside backward is the one whose gradients flow; that one is recorded, once.
TEST(AuditTrainingLoop, NoGradForwardRecomputedInBackwardIsRecordedThere) {
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.01);
  Audit audit(net);
  opt.zero_grad();
  const at::Tensor x = at::randn({4, 6});
  {
    ::torch::NoGradGuard no_grad;
    audit.forward(net, x);
  }
  const at::Tensor trigger = at::ones({1}).requires_grad_(true);
  at::Tensor inner_loss;
  trigger.register_hook([&](const at::Tensor& g) {
    at::AutoGradMode enable(true);  // backward runs hooks without gradients; checkpointing enables them
    inner_loss = audit.forward(net, x).pow(2).sum();
    inner_loss.backward();  // a nested backward, as reentrant checkpointing runs
    return g;
  });
  (trigger * 2).sum().backward();
  audit.step(opt);
  const auto rs = audit.records();
  EXPECT_EQ(total_count(of(rs, "fc1", Site::kActivation), Site::kActivation), 4 * 8);
  EXPECT_EQ(total_count(of(rs, "fc1", Site::kOutputGrad), Site::kOutputGrad), 4 * 8);
}

TEST(AuditTrainingLoop, StepWithAnotherModelsOptimizerThrowsBeforeAnythingRuns) {
  auto net = mlp();
  auto other = mlp();
  ::torch::optim::SGD opt_other(other->parameters(), 0.1);
  Audit audit(net);
  opt_other.zero_grad();
  audit.forward(net, at::randn({4, 6})).pow(2).sum().backward();
  other->forward(at::randn({4, 6})).pow(2).sum().backward();
  const at::Tensor before = other->parameters()[0].detach().clone();
  try {
    audit.step(opt_other);
    FAIL() << "an optimizer of another model must be an Error";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("holds none of the audited model's 4 parameters"));
  }
  EXPECT_TRUE(other->parameters()[0].equal(before));
  EXPECT_EQ(audit.current_step(), 0);
}

// An on_step that throws (a callback's bug, a Ctrl-C from Python) reaches the caller of step(),
// and the saved run still has that step: the run gets it before the callback does.
TEST(AuditTrainingLoop, AnOnStepThatThrowsLosesNoStepFromTheRun) {
  const std::string dir = ::testing::TempDir() + "gs_audit_onstep_throws";
  std::filesystem::remove_all(dir);
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.05);
  int64_t thrown = 0;
  {
    RunWriter run(dir);
    AuditOptions o;
    o.sink = &run;
    o.on_step = [](const std::vector<Record>& records) {
      if (records.front().step % 2 == 1) throw std::runtime_error("callback failed");
    };
    Audit audit(net, o);
    for (int step = 0; step < 6; ++step) {
      try {
        train_step(audit, net, opt);
      } catch (const std::runtime_error&) {
        ++thrown;
      }
    }
    audit.finish();
    run.close();
  }
  EXPECT_EQ(thrown, 3);
  RunReader reader(dir);
  std::vector<int64_t> steps;
  reader.for_each([&](const Record& r) {
    if (steps.empty() || steps.back() != r.step) steps.push_back(r.step);
  });
  EXPECT_EQ(steps, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));
  std::filesystem::remove_all(dir);
}

// Runs `steps` steps of the same model and data; scale > 0 multiplies the loss by it and
// tells the audit, dividing the gradients back before the optimizer step (in the update
// function, or before step() when `unscale_first`).
std::vector<Record> scaled_run(double scale, bool unscale_first, int steps = 3) {
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.05);
  AuditOptions o;
  o.keep_steps = 0;
  Audit audit(net, o);
  ::torch::manual_seed(1);
  for (int step = 0; step < steps; ++step) {
    if (scale > 0) audit.set_loss_scale(scale, unscale_first);
    opt.zero_grad();
    at::Tensor loss = audit.forward(net, at::randn({4, 6})).pow(2).mean();
    (scale > 0 ? loss * scale : loss).backward();
    auto unscale = [&] {
      ::torch::NoGradGuard no_grad;
      for (auto& p : net->parameters()) p.grad().div_(scale);
    };
    if (scale > 0 && unscale_first) unscale();
    audit.step([&] {
      if (scale > 0 && !unscale_first) unscale();
      opt.step();
    });
  }
  return audit.records();
}

void expect_same_stats(const std::vector<Record>& a, const std::vector<Record>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE(a[i].node + " " + site_name(a[i].site) + " step " + std::to_string(a[i].step));
    ASSERT_EQ(a[i].node, b[i].node);
    ASSERT_EQ(a[i].site, b[i].site);
    const Stats& x = a[i].stats;
    const Stats& y = b[i].stats;
    EXPECT_EQ(x.count, y.count);
    EXPECT_EQ(x.finite, y.finite);
    EXPECT_EQ(x.zero, y.zero);
    EXPECT_EQ(x.saturated, y.saturated);
    EXPECT_EQ(x.sum, y.sum);  // a power-of-two scale: bit for bit
    EXPECT_EQ(x.sum_sq, y.sum_sq);
    EXPECT_EQ(x.sum_abs, y.sum_abs);
    EXPECT_EQ(x.min, y.min);
    EXPECT_EQ(x.max, y.max);
    EXPECT_EQ(x.max_abs, y.max_abs);
  }
}

TEST(AuditTrainingLoop, LossScaledGradientsAreReportedUnscaled) {
  const auto plain = scaled_run(0, false);
  const auto scaled = scaled_run(65536, false);
  expect_same_stats(plain, scaled);
  ASSERT_FALSE(of(plain, "fc1", Site::kParamGrad).empty());
  ASSERT_FALSE(of(plain, "fc1", Site::kOutputGrad).empty());
}

TEST(AuditTrainingLoop, ParameterGradientsUnscaledBeforeStepAreNotDividedTwice) {
  expect_same_stats(scaled_run(0, false), scaled_run(1024, true));
}

// A loss-scaled run whose gradients overflow at some steps: the update function skips the
// optimizer there, as GradScaler does.
struct OverflowRun {
  Report report;
  std::vector<Record> records;
};
OverflowRun overflow_run(const std::vector<int>& overflow_steps, int steps, bool tell_scale, bool step_anyway = false) {
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.05);
  AuditOptions o;
  o.keep_steps = 0;
  Audit audit(net, o);
  double scale = 65536;
  for (int step = 0; step < steps; ++step) {
    if (tell_scale) audit.set_loss_scale(scale);
    opt.zero_grad();
    (audit.forward(net, at::randn({4, 6})).pow(2).mean() * scale).backward();
    const bool overflow = std::find(overflow_steps.begin(), overflow_steps.end(), step) != overflow_steps.end();
    if (overflow) {  // as float16 would: one gradient element past the range
      ::torch::NoGradGuard no_grad;
      net->parameters()[0].grad()[0][0] = std::numeric_limits<float>::infinity();
    }
    audit.step([&] {
      if (overflow && !step_anyway) return;  // skipped
      ::torch::NoGradGuard no_grad;
      for (auto& p : net->parameters()) p.grad().div_(scale);
      opt.step();
    });
    if (overflow) scale /= 2;
  }
  return {audit.report(), audit.records()};
}

TEST(AuditTrainingLoop, StepsSkippedOnOverflowAreNotNaNOfTheModel) {
  const OverflowRun run = overflow_run({0, 1, 2}, 12, true);
  EXPECT_TRUE(run.report.healthy());
  for (const NodeReport& n : run.report.nodes) EXPECT_EQ(n.inf, 0) << n.node;
  const LossScaleReport& ls = run.report.loss_scale;
  EXPECT_EQ(ls.steps, 12);
  EXPECT_EQ(ls.skipped, 3);
  EXPECT_EQ(ls.first_skipped, 0);
  EXPECT_EQ(ls.last_skipped, 2);
  EXPECT_EQ(ls.first_fit, 3);
  EXPECT_EQ(ls.first_scale, 65536);
  EXPECT_EQ(ls.last_scale, 8192);
  EXPECT_EQ(ls.verdict, LossScaleReport::Verdict::kInfo);
  // The skipped steps keep their activations and values, no gradient or update.
  for (const Record& r : run.records) {
    if (r.step > 2) continue;
    EXPECT_NE(r.site, Site::kParamGrad) << r.step;
    EXPECT_NE(r.site, Site::kOutputGrad) << r.step;
    EXPECT_NE(r.site, Site::kUpdate) << r.step;
  }
  EXPECT_EQ(of(run.records, "fc1", Site::kActivation).size(), 12u);
  EXPECT_EQ(of(run.records, "fc1", Site::kParamGrad).size(), 9u);
}

TEST(AuditTrainingLoop, OverflowWithoutALossScaleIsStillInf) {
  const OverflowRun run = overflow_run({0, 1, 2}, 12, false);
  EXPECT_FALSE(run.report.healthy());
  EXPECT_EQ(run.report.loss_scale.steps, 0);
  EXPECT_GT(run.report.nodes.front().inf, 0);
}

TEST(AuditTrainingLoop, AnOptimizerThatSteppedOnOverflowIsNotASkippedStep) {
  const OverflowRun run = overflow_run({4}, 8, true, /*step_anyway=*/true);
  EXPECT_EQ(run.report.loss_scale.skipped, 0);
  EXPECT_FALSE(run.report.healthy());  // the Inf went into the weights
}

TEST(AuditTrainingLoop, SkipsThatPersistAreAWarning) {
  const OverflowRun run = overflow_run({4, 5, 6, 7, 8, 9}, 10, true);
  const LossScaleReport& ls = run.report.loss_scale;
  EXPECT_EQ(ls.skipped, 6);
  EXPECT_EQ(ls.trailing_skipped, 6);
  EXPECT_EQ(ls.verdict, LossScaleReport::Verdict::kWarning);
  EXPECT_FALSE(run.report.healthy());
  try {
    assert_healthy(run.report);
    FAIL() << "a warning loss scale is not healthy";
  } catch (const HealthError& e) {
    EXPECT_THAT(e.what(), HasSubstr("LOSS_SCALE_OVERFLOW: 6 of 10 steps skipped"));
  }
}

TEST(AuditTrainingLoop, LossScaleMustBeFiniteAndPositive) {
  auto net = mlp();
  Audit audit(net);
  // Above float32's largest no scaler holds it, and the statistics' division by its square
  // would reach infinity (1e200 was taken and turned every sum of squares into 0).
  for (double bad : {0.0, -2.0, std::nan(""), std::numeric_limits<double>::infinity(), 1e200, 1e308, 3.5e38})
    EXPECT_THROW(audit.set_loss_scale(bad), Error) << bad;
  audit.set_loss_scale(std::ldexp(1.0, 127));  // the largest power of two a float32 holds
  audit.set_loss_scale(std::numeric_limits<float>::max());
}

// The dying-ReLU layers (fc2's bias -10 before its ReLU), flat or as one Sequential child.
nn::Sequential dying_relu_layers() {
  ::torch::manual_seed(7);
  nn::Linear fc2(16, 16);
  {
    ::torch::NoGradGuard no_grad;
    fc2->bias.fill_(-10.0);
  }
  return nn::Sequential({{"fc1", nn::Linear(8, 16)}, {"relu1", nn::ReLU()}, {"fc2", fc2}, {"relu2", nn::ReLU()},
                         {"out", nn::Linear(16, 3)}});
}

// LibTorch nests a Sequential in another only through a subclass with a plain forward.
struct WrappedImpl : nn::SequentialImpl {
  explicit WrappedImpl(const nn::Sequential& inner) {
    const auto names = inner->named_children();
    std::size_t i = 0;
    for (auto it = inner->begin(); it != inner->end(); ++it, ++i) push_back(names[i].key(), *it);
  }
  at::Tensor forward(at::Tensor x) { return nn::SequentialImpl::forward(x); }
};
TORCH_MODULE(Wrapped);

Report trained(nn::Sequential model) {
  ::torch::optim::SGD opt(model->parameters(), 0.01);
  Audit audit(model);
  ::torch::manual_seed(3);
  for (int step = 0; step < 20; ++step) {
    opt.zero_grad();
    audit.forward(model, at::randn({32, 8})).pow(2).mean().backward();
    audit.step(opt);
  }
  return audit.report();
}

TEST(AuditTrainingLoop, ALayerInANestedSequentialKeepsItsFlags) {
  const Report flat = trained(dying_relu_layers());
  const Report wrapped = trained(nn::Sequential({{"net", Wrapped(dying_relu_layers())}}));
  for (const char* layer : {"fc1", "fc2", "out"})
    EXPECT_EQ(node_of(wrapped, std::string("net/") + layer).flags_label(), node_of(flat, layer).flags_label())
        << layer;
  EXPECT_TRUE(node_of(flat, "fc2").flags.contains(Flag::kDead));
  // Its submodules' flags are net's: the verdict counts one node.
  EXPECT_TRUE(node_of(wrapped, "net").flags.contains(Flag::kDead));
  EXPECT_EQ(wrapped.verdict_nodes().size(), 1u);
}

}  // namespace
}  // namespace gradscope::torch
