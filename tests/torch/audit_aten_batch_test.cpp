// The ATen path of an audited step (docs/devices.md): every summary of the step is copied to
// the host at once, one device-to-host copy per device per step, and the records are bit for
// bit those of one copy per tensor (internal::aten_stats on each tensor, merged in the same
// order). CPU tensors are forced through the path, as a GPU run measures.
#include <ATen/ATen.h>
#include <ATen/record_function.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>

#include "aten_stats_expect.h"
#include "audit/channel_math.h"  // src/torch, internal
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

namespace nn = ::torch::nn;
using test::ForceAten;

// Every field equal, bit for bit: the fields expect_agree compares, and the sums too (no Stats
// field is ever NaN: they cover finite values only).
void expect_same(const Stats& want, const Stats& got) {
  test::expect_agree(want, got);
  EXPECT_EQ(got.sum, want.sum);
  EXPECT_EQ(got.sum_sq, want.sum_sq);
  EXPECT_EQ(got.sum_abs, want.sum_abs);
}

const StatsOptions kOptions = AuditOptions{}.thresholds.stats_options(1);

// One tensor on its own through the ATen path: one copy per tensor, as before the batch.
Stats alone(const at::Tensor& t) { return internal::aten_stats(t, "t", kOptions); }

const Record& find(const std::vector<Record>& rs, const std::string& node, Site site, std::size_t nth = 0) {
  for (const Record& r : rs)
    if (r.node == node && r.site == site && nth-- == 0) return r;
  throw std::runtime_error("no record " + node);
}

// Conv2d, then two Linear layers; fc1's pre-activation is recorded. Taps by hand, so the test
// holds every tensor the audit measures.
struct NetImpl : nn::Module {
  nn::Conv2d conv{nn::Conv2dOptions(2, 4, 3)};
  nn::Linear fc1{4 * 3 * 3, 8}, fc2{8, 3};
  NetImpl() {
    register_module("conv", conv);
    register_module("fc1", fc1);
    register_module("fc2", fc2);
  }
};
TORCH_MODULE(Net);

Net make_net() {
  ::torch::manual_seed(0);
  return Net();
}

std::vector<std::pair<std::string, std::shared_ptr<nn::Module>>> nodes_of(const Net& net) {
  return {{"conv", net->conv.ptr()}, {"fc1", net->fc1.ptr()}, {"fc2", net->fc2.ptr()}};
}

// What one step measured, kept to compute the expected records one tensor at a time.
struct Seen {
  at::Tensor act_conv, pre_fc1, act_fc1, act_fc2;
};

Seen forward_backward(Net& net, Audit& audit, const at::Tensor& x) {
  Seen s;
  s.act_conv = audit.tap("conv", net->conv(x).tanh());
  s.pre_fc1 = net->fc1(s.act_conv.flatten(1));
  audit.record_pre_activation("fc1", s.pre_fc1);
  s.act_fc1 = audit.tap("fc1", s.pre_fc1.tanh());
  s.act_fc2 = audit.tap("fc2", net->fc2(s.act_fc1));
  for (at::Tensor* t : {&s.act_conv, &s.act_fc1, &s.act_fc2}) t->retain_grad();
  s.act_fc2.pow(2).sum().backward();
  return s;
}

// Each parameter site of `node`, one tensor at a time, merged in parameter order.
Stats merged(nn::Module& m, const std::function<at::Tensor(const std::string&, const at::Tensor&)>& of) {
  Stats out;
  for (const auto& p : m.named_parameters()) out = merge(out, alone(of(p.key(), p.value())));
  return out;
}

TEST(AuditAtenBatch, OneCopyPerStepAndTheRecordsOfOneCopyPerTensor) {
  ForceAten force(true);
  Net net = make_net();
  ::torch::optim::SGD opt(net->parameters(), 0.1);
  AuditOptions o;
  o.channels["conv"] = ChannelView{1, 1, {}};  // per-channel statistics go through the batch too
  Audit audit(nodes_of(net), o);
  const at::Tensor x = at::randn({5, 2, 5, 5});
  opt.zero_grad();
  const std::size_t before = internal::aten_stats_copies();
  const Seen s = forward_backward(net, audit, x);
  EXPECT_EQ(internal::aten_stats_copies(), before) << "nothing is copied before the step ends";
  std::map<std::string, at::Tensor> values, grads;
  for (const auto& p : net->named_parameters()) {
    values[p.key()] = p.value().detach().clone();
    grads[p.key()] = p.value().grad().clone();
  }
  audit.step(opt);
  EXPECT_EQ(internal::aten_stats_copies() - before, 1u) << "one device-to-host copy for the whole step";
  // The records, with the old path's copy per tensor (counted after the check above).
  const std::vector<Record> rs = audit.records();
  ASSERT_EQ(rs.size(), 4u + 3u + 3u * 3u);
  const std::size_t per_tensor = internal::aten_stats_copies();
  expect_same(alone(s.act_conv), find(rs, "conv", Site::kActivation).stats);
  expect_same(alone(s.pre_fc1), find(rs, "fc1", Site::kPreActivation).stats);
  expect_same(alone(s.act_fc1), find(rs, "fc1", Site::kActivation).stats);
  expect_same(alone(s.act_fc2), find(rs, "fc2", Site::kActivation).stats);
  expect_same(alone(s.act_conv.grad()), find(rs, "conv", Site::kOutputGrad).stats);
  expect_same(alone(s.act_fc1.grad()), find(rs, "fc1", Site::kOutputGrad).stats);
  expect_same(alone(s.act_fc2.grad()), find(rs, "fc2", Site::kOutputGrad).stats);
  for (const char* node : {"conv", "fc1", "fc2"}) {
    SCOPED_TRACE(node);
    nn::Module& m = *net->named_children()[node];
    const std::string prefix = std::string(node) + ".";
    expect_same(merged(m, [&](const std::string& k, const at::Tensor&) { return values[prefix + k]; }),
                find(rs, node, Site::kParam).stats);
    expect_same(merged(m, [&](const std::string& k, const at::Tensor&) { return grads[prefix + k]; }),
                find(rs, node, Site::kParamGrad).stats);
    expect_same(merged(m, [&](const std::string& k, const at::Tensor& now) { return now.detach() - values[prefix + k]; }),
                find(rs, node, Site::kUpdate).stats);
  }
  const std::vector<ChannelRecord> channels = audit.channel_records();
  ASSERT_EQ(channels.size(), 1u);
  const std::vector<Stats> act = internal::per_channel_stats(s.act_conv, 1, kOptions);
  const std::vector<Stats> grad = internal::per_channel_stats(s.act_conv.grad(), 1, kOptions);
  // The per-tensor path, as the audit measured before its step-wide batch: 27 copies (7
  // forward and backward tensors, 6 parameters x value, gradient and update, 2 channel views).
  EXPECT_EQ(internal::aten_stats_copies() - per_tensor, 27u);
  ASSERT_EQ(channels[0].activation.size(), 4u);
  ASSERT_EQ(channels[0].output_grad.size(), 4u);
  for (std::size_t c = 0; c < 4; ++c) {
    expect_same(act[c], channels[0].activation[c]);
    expect_same(grad[c], channels[0].output_grad[c]);
  }
  // A second step: one copy again, and records() after it copies nothing more.
  opt.zero_grad();
  const std::size_t second = internal::aten_stats_copies();
  forward_backward(net, audit, x);
  audit.step(opt);
  (void)audit.records();
  (void)audit.report();
  EXPECT_EQ(internal::aten_stats_copies() - second, 1u);
}

TEST(AuditAtenBatch, TheSameRecordsAsTheFusedKernelToTheDocumentedTolerance) {
  auto run = [](bool aten) {
    ForceAten force(aten);
    Net net = make_net();
    ::torch::optim::SGD opt(net->parameters(), 0.1);
    Audit audit(nodes_of(net));
    ::torch::manual_seed(1);
    const at::Tensor x = at::randn({5, 2, 5, 5});
    for (int step = 0; step < 2; ++step) {
      opt.zero_grad();
      forward_backward(net, audit, x);
      audit.step(opt);
    }
    return audit.records();
  };
  const std::vector<Record> fused = run(false), aten = run(true);
  ASSERT_EQ(aten.size(), fused.size());
  for (std::size_t i = 0; i < fused.size(); ++i) {
    SCOPED_TRACE(fused[i].node + " " + std::to_string(static_cast<int>(fused[i].site)));
    EXPECT_EQ(aten[i].node, fused[i].node);
    EXPECT_EQ(aten[i].site, fused[i].site);
    EXPECT_EQ(aten[i].step, fused[i].step);
    test::expect_agree(fused[i].stats, aten[i].stats);
  }
}

TEST(AuditAtenBatch, NoTensorOnTheAtenPathCopiesNothing) {
  ForceAten force(false);
  Net net = make_net();
  ::torch::optim::SGD opt(net->parameters(), 0.1);
  Audit audit(nodes_of(net));
  const std::size_t before = internal::aten_stats_copies();
  opt.zero_grad();
  forward_backward(net, audit, at::randn({5, 2, 5, 5}));
  audit.step(opt);
  EXPECT_EQ(audit.records().size(), 16u);
  EXPECT_EQ(internal::aten_stats_copies(), before);
}

TEST(AuditAtenBatch, ABackwardAfterTheStepJoinsTheNextCopy) {
  ForceAten force(true);
  Net net = make_net();
  ::torch::optim::SGD opt(net->parameters(), 0.1);
  Audit audit(nodes_of(net));
  const at::Tensor x = at::randn({5, 2, 5, 5});
  at::Tensor y = audit.tap("conv", net->conv(x).tanh());
  y.retain_grad();
  const std::size_t before = internal::aten_stats_copies();
  audit.step([] {});  // step 0 ends before its backward runs
  EXPECT_EQ(internal::aten_stats_copies() - before, 1u);
  y.pow(2).sum().backward();  // the hook queues step 0's output gradient now
  EXPECT_EQ(internal::aten_stats_copies() - before, 1u);
  const std::vector<Record> rs = audit.records();  // reading it resolves what is queued
  EXPECT_EQ(internal::aten_stats_copies() - before, 2u);
  const Record& late = find(rs, "conv", Site::kOutputGrad);
  EXPECT_EQ(late.step, 0);
  expect_same(alone(y.grad()), late.stats);
  // Queued, not resolved, until the next step ends: that step still makes one copy.
  at::Tensor z = audit.tap("conv", net->conv(x).tanh());
  z.retain_grad();
  z.sum().backward();
  const std::size_t next = internal::aten_stats_copies();
  audit.step(opt);
  EXPECT_EQ(internal::aten_stats_copies() - next, 1u);
  expect_same(alone(z.grad()), find(audit.records(), "conv", Site::kOutputGrad, 1).stats);
}

TEST(AuditAtenBatch, EmptyNaNAndInfTensorsInTheSameCopy) {
  ForceAten force(true);
  Net net = make_net();
  Audit audit(nodes_of(net));
  constexpr float kNaN = std::numeric_limits<float>::quiet_NaN(), kInf = std::numeric_limits<float>::infinity();
  const at::Tensor empty = at::empty({0, 3});
  const at::Tensor odd = at::tensor({1.5f, kNaN, kInf, -kInf, 0.0f, -60.0f});
  const std::size_t before = internal::aten_stats_copies();
  audit.tap("fc2", empty);
  audit.tap("fc2", odd);
  audit.record_pre_activation("fc1", empty);
  audit.step([] {});
  EXPECT_EQ(internal::aten_stats_copies() - before, 1u);
  const std::vector<Record> rs = audit.records();
  const Record& e = find(rs, "fc2", Site::kActivation, 0);
  EXPECT_EQ(e.stats.count, 0);
  expect_same(Stats{}, e.stats);
  expect_same(Stats{}, find(rs, "fc1", Site::kPreActivation).stats);
  const Record& n = find(rs, "fc2", Site::kActivation, 1);
  expect_same(alone(odd), n.stats);
  EXPECT_EQ(n.stats.nan, 1);
  EXPECT_EQ(n.stats.pos_inf, 1);
  EXPECT_EQ(n.stats.neg_inf, 1);
  EXPECT_EQ(n.stats.zero, 1);
  EXPECT_EQ(n.stats.saturated, 1);
  EXPECT_EQ(n.stats.min, -60.0);
  // The parameters of every node (values, no gradients), in the same copy.
  expect_same(merge(alone(net->fc2->weight), alone(net->fc2->bias)), find(rs, "fc2", Site::kParam).stats);
}

TEST(AuditAtenBatch, ARefusedTensorLeavesNoRecordAndTheStepGoesOn) {
  ForceAten force(true);
  Net net = make_net();
  Audit audit(nodes_of(net));
  EXPECT_THROW(audit.tap("fc2", at::ones({3}, at::kLong)), Error);
  EXPECT_THROW(audit.record_pre_activation("fc1", at::ones({3}, at::kLong)), Error);
  const at::Tensor ok = at::randn({4, 3});
  audit.tap("fc2", ok);
  audit.step([] {});
  const std::vector<Record> rs = audit.records();
  ASSERT_EQ(rs.size(), 1u + 3u);  // the good tap, and each node's parameters
  expect_same(alone(ok), find(rs, "fc2", Site::kActivation).stats);
}

TEST(AuditAtenBatch, SparseGradientsAreTheTouchedRowsInTheSameCopy) {
  ForceAten force(true);
  ::torch::manual_seed(0);
  nn::Embedding emb(nn::EmbeddingOptions(10, 4).sparse(true));
  ::torch::optim::SGD opt(emb->parameters(), 0.1);
  Audit audit({{"emb", emb.ptr()}});
  const at::Tensor before = emb->weight.detach().clone();
  const std::size_t copies = internal::aten_stats_copies();
  audit.tap("emb", emb(at::tensor({1, 1, 3}, at::kLong))).sum().backward();
  const at::Tensor grad = emb->weight.grad().coalesce().values().clone();
  audit.step(opt);
  EXPECT_EQ(internal::aten_stats_copies() - copies, 1u);
  const std::vector<Record> rs = audit.records();
  const Record& g = find(rs, "emb", Site::kParamGrad);
  EXPECT_EQ(g.stats.count, 2 * 4);  // rows 1 and 3, row 1 summed over its two uses
  expect_same(alone(grad), g.stats);
  expect_same(alone(before), find(rs, "emb", Site::kParam).stats);
  expect_same(alone(emb->weight.detach() - before), find(rs, "emb", Site::kUpdate).stats);
}

// Scalar reads (`.item()`: a synchronisation each on a GPU) during one audited step, counted
// as LibTorch dispatches them. These are the ones docs/devices.md lists as left.
std::atomic<int> g_items{0};
std::unique_ptr<at::ObserverContext> count_item(const at::RecordFunction& fn) {
  if (std::strcmp(fn.name(), "aten::_local_scalar_dense") == 0) ++g_items;
  return nullptr;
}

int items_in_one_step(const AuditOptions& o, bool nan) {
  Net net = make_net();
  ::torch::optim::SGD opt(net->parameters(), 0.1);
  Audit audit(nodes_of(net), o);
  at::Tensor x = at::randn({5, 2, 5, 5});
  if (nan) x[0][0][0][0] = std::nan("");
  opt.zero_grad();
  const auto handle = at::addGlobalCallback(at::RecordFunctionCallback(count_item));
  g_items = 0;
  const at::Tensor a = audit.tap("conv", net->conv(x).tanh());
  const at::Tensor h = audit.tap("fc1", net->fc1(a.flatten(1)).tanh());
  audit.tap("fc2", net->fc2(h)).sum().backward();
  audit.step(opt);
  at::removeCallback(handle);
  return g_items.load();
}

TEST(AuditAtenBatch, ScalarReadsLeftAreEffectiveRankAndCka) {
  ForceAten force(true);
  AuditOptions plain;
  EXPECT_EQ(items_in_one_step(plain, false), 0);
  AuditOptions snr;
  snr.gradient_snr = true;  // its sums stay on the device; report() reads them
  EXPECT_EQ(items_in_one_step(snr, false), 0);
  AuditOptions rank;
  rank.channels["conv"] = ChannelView{1, 1, {}};
  // Effective rank: its own three (finite check, trace, entropy) and two inside the LibTorch
  // ops it calls (measured; the eigensolver's error check and masked_select's size, by their
  // sources).
  EXPECT_EQ(items_in_one_step(rank, false), 5);
  EXPECT_EQ(items_in_one_step(rank, true), 1);  // NaN: the finite check only
  AuditOptions groups;
  groups.channels["conv"] = ChannelView{1, 1, {{0, 2}, {2, 4}}};
  EXPECT_EQ(items_in_one_step(groups, false), 5 + 5);  // and one CKA: two finite checks, three sums
  AuditOptions leakage;
  leakage.leakage_pairs = {{"fc1", "fc2"}};
  leakage.leakage_every = 1;
  EXPECT_EQ(items_in_one_step(leakage, false), 5);  // one CKA at the step's end
}

}  // namespace
}  // namespace gradscope::torch
