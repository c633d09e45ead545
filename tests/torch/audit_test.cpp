// The module audit on small real LibTorch models: values against LibTorch's own numbers,
// RAII, sampling, order, scopes and bad input.
#include "gradscope/torch/audit/audit.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "audit_test_util.h"
#include "gradscope/core/error.h"

namespace gradscope::torch {
namespace {

namespace nn = ::torch::nn;
using ::testing::HasSubstr;

using audit_test::mlp;
using audit_test::node_of;
using audit_test::of;

// Live (not removed) C++ hooks on a tensor; LibTorch nulls removed hooks in place.
std::size_t hook_count(const at::Tensor& t) {
  auto* meta = ::torch::autograd::impl::get_autograd_meta(t);
  if (!meta || !meta->cpp_hooks_list_) return 0;
  std::size_t live = 0;
  for (const auto& h : *meta->cpp_hooks_list_) live += static_cast<bool>(h);
  return live;
}

TEST(Audit, NodesAreChildrenWithParameters) {
  auto net = mlp();
  Audit audit(net);
  EXPECT_EQ(audit.node_ids(), (std::vector<std::string>{"fc1", "fc2"}));
}

TEST(Audit, MeasuresMatchLibTorch) {
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.1);
  Audit audit(net);
  const at::Tensor x = at::randn({5, 6});
  const at::Tensor h = net[0]->as<nn::Linear>()->forward(x).relu();
  opt.zero_grad();
  at::Tensor y = audit.forward(net, x);
  y.pow(2).sum().backward();
  const at::Tensor w = net->named_parameters()["fc1.weight"].detach().clone();
  const at::Tensor b = net->named_parameters()["fc1.bias"].detach().clone();
  const at::Tensor gw = net->named_parameters()["fc1.weight"].grad().clone();
  const at::Tensor gb = net->named_parameters()["fc1.bias"].grad().clone();
  // The gradient flowing into fc1's group output, from autograd, before the update.
  const at::Tensor hh = h.detach().requires_grad_(true);
  net[2]->as<nn::Linear>()->forward(hh).pow(2).sum().backward();
  audit.step(opt);
  const auto rs = audit.records();

  // fc1's activation is its group's output: Linear then ReLU.
  const auto act = of(rs, "fc1", Site::kActivation);
  ASSERT_EQ(act.size(), 1u);
  EXPECT_NEAR(act[0].stats.mean_abs(), h.abs().mean().item<double>(), 1e-6);
  EXPECT_EQ(act[0].stats.zero, h.eq(0).sum().item<int64_t>());
  const auto og = of(rs, "fc1", Site::kOutputGrad);
  ASSERT_EQ(og.size(), 1u);
  EXPECT_NEAR(og[0].stats.l2(), hh.grad().norm().item<double>(), 1e-5);
  // Parameter gradients and values, merged over weight and bias.
  const double grad_l2 = std::sqrt(gw.pow(2).sum().item<double>() + gb.pow(2).sum().item<double>());
  EXPECT_NEAR(of(rs, "fc1", Site::kParamGrad).at(0).stats.l2(), grad_l2, 1e-5);
  EXPECT_EQ(of(rs, "fc1", Site::kParamGrad).at(0).stats.count, 6 * 8 + 8);
  const double param_l2 = std::sqrt(w.pow(2).sum().item<double>() + b.pow(2).sum().item<double>());
  EXPECT_NEAR(of(rs, "fc1", Site::kParam).at(0).stats.l2(), param_l2, 1e-5);
  // The update is the real change: SGD without momentum moves by lr * grad.
  EXPECT_NEAR(of(rs, "fc1", Site::kUpdate).at(0).stats.l2(), 0.1 * grad_l2, 1e-5);
  EXPECT_NEAR(audit.report().nodes.at(0).update_ratio, 0.1 * grad_l2 / param_l2, 1e-6);
}

TEST(Audit, GradientsAreReadAfterAccumulation) {
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.1);
  Audit audit(net);
  opt.zero_grad();
  for (int micro = 0; micro < 3; ++micro) audit.forward(net, at::randn({4, 6})).sum().backward();
  const double accumulated = net->named_parameters()["fc2.weight"].grad().norm().item<double>();
  audit.step(opt);
  const auto g = of(audit.records(), "fc2", Site::kParamGrad);
  ASSERT_EQ(g.size(), 1u);
  const double bias = net->named_parameters()["fc2.bias"].grad().norm().item<double>();
  EXPECT_NEAR(g[0].stats.l2(), std::sqrt(accumulated * accumulated + bias * bias), 1e-5);
  // Three forward calls in one step: all three activations count.
  EXPECT_EQ(of(audit.records(), "fc2", Site::kActivation).size(), 3u);
  EXPECT_EQ(audit.report().nodes.at(1).steps, 1);
}

TEST(Audit, SampleEveryAuditsOnlyThoseSteps) {
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.01);
  AuditOptions o;
  o.sample_every = 4;
  Audit audit(net, o);
  for (int s = 0; s < 10; ++s) {
    opt.zero_grad();
    audit.forward(net, at::randn({4, 6})).sum().backward();
    audit.step(opt);
  }
  std::set<int64_t> steps;
  for (const Record& r : audit.records()) steps.insert(r.step);
  EXPECT_EQ(steps, (std::set<int64_t>{0, 4, 8}));
  EXPECT_EQ(audit.current_step(), 10);
}

TEST(Audit, OnStepHandsOverEachStepAndAFunctionUpdateMeasuresTheSame) {
  auto run = [](bool with_function, bool keep) {
    auto net = mlp();
    ::torch::optim::SGD opt(net->parameters(), 0.1);
    std::vector<std::vector<Record>> handed;
    AuditOptions o;
    o.keep_records = keep;
    o.on_step = [&](const std::vector<Record>& rs) { handed.push_back(rs); };
    Audit audit(net, o);
    ::torch::manual_seed(3);
    for (int s = 0; s < 3; ++s) {
      opt.zero_grad();
      audit.forward(net, at::randn({4, 6})).sum().backward();
      if (with_function) audit.step([&] { opt.step(); });
      else audit.step(opt);
    }
    EXPECT_EQ(audit.records().size(), keep ? 3 * handed.at(0).size() : 0u);
    return handed;
  };
  const auto a = run(false, true), b = run(true, false);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (std::size_t s = 0; s < 3; ++s) {
    ASSERT_EQ(a[s].size(), b[s].size());
    for (std::size_t i = 0; i < a[s].size(); ++i) {
      EXPECT_EQ(a[s][i].step, static_cast<int64_t>(s));
      EXPECT_EQ(a[s][i].node, b[s][i].node);
      EXPECT_EQ(a[s][i].site, b[s][i].site);
      EXPECT_EQ(a[s][i].stats.sum_sq, b[s][i].stats.sum_sq);  // same measurement either way
    }
  }
}

TEST(Audit, HooksAreRemovedOnDestructionAlsoWhenTrainingThrows) {
  auto net = mlp();
  const at::Tensor w = net->named_parameters()["fc1.weight"];
  const std::size_t before = hook_count(w);
  at::Tensor pending;
  try {
    Audit audit(net);
    EXPECT_GT(hook_count(w), before);  // order hook until the first audited step
    pending = audit.forward(net, at::randn({3, 6})).sum();
    throw std::runtime_error("loss exploded");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(hook_count(w), before);
  // The graph still carries the audit's output-gradient hooks: they are inert now.
  pending.backward();
  EXPECT_TRUE(w.grad().defined());
}

TEST(Audit, TrainingIsUnchangedByTheAudit) {
  auto run = [](bool audited) {
    auto net = mlp();
    ::torch::optim::SGD opt(net->parameters(), ::torch::optim::SGDOptions(0.05).momentum(0.9));
    std::unique_ptr<Audit> audit;
    if (audited) audit = std::make_unique<Audit>(net);
    ::torch::manual_seed(1);
    for (int s = 0; s < 5; ++s) {
      opt.zero_grad();
      const at::Tensor x = at::randn({4, 6});
      (audited ? audit->forward(net, x) : net->forward(x)).pow(2).mean().backward();
      if (audited) audit->step(opt);
      else opt.step();
    }
    return net->named_parameters()["fc2.weight"].detach().clone();
  };
  EXPECT_TRUE(at::equal(run(false), run(true)));
}

TEST(Audit, ExecutionOrderComesFromTapsOrFromBackward) {
  // Registered head first, but body runs first.
  struct Net : nn::Module {
    nn::Linear head{nullptr}, body{nullptr};
    Net() {
      head = register_module("head", nn::Linear(4, 2));
      body = register_module("body", nn::Linear(3, 4));
    }
  };
  auto net = std::make_shared<Net>();
  ::torch::optim::SGD opt(net->parameters(), 0.1);
  Audit audit(std::static_pointer_cast<nn::Module>(net));
  EXPECT_EQ(audit.node_ids(), (std::vector<std::string>{"head", "body"}));  // before any step
  net->head->forward(net->body->forward(at::randn({2, 3})).tanh()).sum().backward();
  audit.step(opt);
  EXPECT_EQ(audit.node_ids(), (std::vector<std::string>{"body", "head"}));
  EXPECT_EQ(audit.report().nodes.at(0).node, "body");
}

TEST(Audit, FrozenUnusedAndStagnantNodes) {
  ::torch::manual_seed(0);
  nn::Sequential net({{"frozen", nn::Linear(4, 4)}, {"live", nn::Linear(4, 4)}, {"unused", nn::Linear(4, 4)}});
  for (auto& p : net[0]->parameters()) p.set_requires_grad(false);
  ::torch::optim::SGD opt(net[1]->parameters(), 0.0);  // lr 0: nothing ever moves
  Audit audit(net);
  for (int s = 0; s < 12; ++s) {
    opt.zero_grad();
    at::Tensor x = audit.tap("frozen", net[0]->as<nn::Linear>()->forward(at::randn({3, 4})));
    audit.tap("live", net[1]->as<nn::Linear>()->forward(x)).sum().backward();
    audit.step(opt);
  }
  const Report r = audit.report();
  EXPECT_EQ(node_of(r, "frozen").flags.join(), "FROZEN");
  EXPECT_EQ(node_of(r, "unused").flags.join(), "NO_DATA");
  EXPECT_EQ(node_of(r, "live").flags.join(), "STAGNANT");
  EXPECT_EQ(node_of(r, "live").update_ratio, 0.0);
}

TEST(Audit, NaNOriginIsTheNodeThatProducedIt) {
  ::torch::manual_seed(0);
  nn::Sequential net({{"a", nn::Linear(4, 4)}, {"b", nn::Linear(4, 4)}, {"c", nn::Linear(4, 1)}});
  ::torch::optim::SGD opt(net->parameters(), 0.0);
  AuditOptions o;
  o.free_nodes = {"log"};
  Audit audit(net, o);
  for (int s = 0; s < 4; ++s) {
    opt.zero_grad();
    at::Tensor h = audit.tap("a", net[0]->as<nn::Linear>()->forward(at::randn({3, 4})));
    h = audit.tap("b", net[1]->as<nn::Linear>()->forward(h));
    if (s == 2) h = audit.tap("log", h.log());  // negative inputs: NaN from step 2
    audit.tap("c", net[2]->as<nn::Linear>()->forward(h)).sum().backward();
    audit.step(opt);
  }
  const Report r = audit.report();
  EXPECT_EQ(r.nonfinite_origin.step, 2);
  EXPECT_EQ(r.nonfinite_origin.node, "log");
  EXPECT_EQ(r.nonfinite_origin.phase, "forward");
  EXPECT_TRUE(node_of(r, "c").flags.contains(Flag::kNaN));
  // "a" ran before the log: its activations stay finite (its gradients do not).
  EXPECT_EQ(of(audit.records(), "a", Site::kActivation).at(2).stats.nan, 0);
  EXPECT_EQ(audit.node_ids(), (std::vector<std::string>{"a", "b", "log", "c"}));
}

TEST(Audit, UnknownTapIdNamesTheNearest) {
  auto net = mlp();
  Audit audit(net);
  try {
    audit.tap("fc3", at::ones({2}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown node id 'fc3'; nearest: 'fc1', 'fc2'"));
  }
}

TEST(Audit, SparseEmbeddingGradientsAreTheTouchedRows) {
  ::torch::manual_seed(0);
  nn::Embedding emb(nn::EmbeddingOptions(100, 8).sparse(true));
  ::torch::optim::SGD opt(emb->parameters(), 0.1);
  Audit audit({{"emb", emb.ptr()}});
  audit.tap("emb", emb->forward(at::tensor({3, 7, 3}, at::kLong))).sum().backward();
  audit.step(opt);
  const auto g = of(audit.records(), "emb", Site::kParamGrad);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].stats.count, 2 * 8);  // two distinct rows after coalescing
  EXPECT_NEAR(g[0].stats.l2(), std::sqrt(8 * 4.0 + 8 * 1.0), 1e-6);  // row 3 twice: grad 2
}

TEST(Audit, BFloat16ParametersAreRead) {
  ::torch::manual_seed(0);
  nn::Linear fc(4, 3);
  fc->to(at::kBFloat16);
  ::torch::optim::SGD opt(fc->parameters(), 0.1);
  Audit audit({{"fc", fc.ptr()}});
  audit.tap("fc", fc->forward(at::randn({2, 4}).to(at::kBFloat16))).sum().backward();
  const double expected = std::sqrt(fc->weight.to(at::kDouble).pow(2).sum().item<double>() +
                                    fc->bias.to(at::kDouble).pow(2).sum().item<double>());
  audit.step(opt);
  const auto p = of(audit.records(), "fc", Site::kParam);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_NEAR(p[0].stats.l2(), expected, 1e-9 * expected);  // exact: bf16 widens exactly
}

TEST(Audit, GradientSnrFollowsItsDefinition) {
  ::torch::manual_seed(0);
  nn::Linear fc(3, 1);
  ::torch::optim::SGD opt(fc->parameters(), 0.0);
  AuditOptions o;
  o.gradient_snr = true;
  Audit audit({{"fc", fc.ptr()}}, o);
  std::vector<at::Tensor> grads;
  for (int s = 0; s < 6; ++s) {
    opt.zero_grad();
    audit.tap("fc", fc->forward(at::randn({4, 3}))).pow(2).sum().backward();
    grads.push_back(at::cat({fc->weight.grad().flatten(), fc->bias.grad().flatten()}).to(at::kDouble));
    audit.step(opt);
  }
  const at::Tensor g = at::stack(grads);
  const double signal = g.mean(0).pow(2).sum().item<double>();
  const double noise = (g - g.mean(0)).pow(2).sum(1).mean().item<double>();
  EXPECT_NEAR(audit.report().nodes.at(0).grad_snr, signal / noise, 1e-6 * signal / noise);
}

}  // namespace
}  // namespace gradscope::torch
