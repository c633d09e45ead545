// Audit::record_attention: the per-head statistics handed to the sink at the sampled steps,
// against the softmax LibTorch computes; masks of both kinds; what is refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>

#include "gradscope/core/error.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

using ::testing::HasSubstr;

struct Capture : RunSink {
  std::vector<StepRecords> steps;
  void add_step(const StepRecords& s) override { steps.push_back(s); }
  void set_summary(const RunSummary&) override {}
};

// Per head: (largest visible logit, mean entropy in nats, queries with top weight > 0.99).
struct Truth {
  double max_logit, mean_entropy;
  int64_t top;
};

std::vector<Truth> truth(const at::Tensor& logits, const at::Tensor& visible) {
  const at::Tensor l = logits.to(at::kDouble).masked_fill(visible.logical_not(), -INFINITY);
  const at::Tensor p = at::softmax(l, -1);
  const at::Tensor ent = -(p * at::log(p.clamp_min(1e-300))).sum(-1);  // [b, h, q]
  std::vector<Truth> out;
  for (int64_t h = 0; h < logits.size(1); ++h) {
    const at::Tensor lh = l.select(1, h);
    out.push_back({lh.index({at::isfinite(lh)}).max().item<double>(), ent.select(1, h).mean().item<double>(),
                   (p.select(1, h).amax(-1) > 0.99).sum().item<int64_t>()});
  }
  return out;
}

TEST(AuditAttention, SampledStepsCarryEachHeadsStatistics) {
  ::torch::manual_seed(0);
  ::torch::nn::Linear attn(4, 4);
  Capture sink;
  AuditOptions o;
  o.attention_every = 2;
  o.sink = &sink;
  Audit audit({{"attn", attn.ptr()}}, o);
  ::torch::optim::SGD opt(attn->parameters(), 0.1);
  const at::Tensor causal = ::torch::ones({5, 5}, at::kBool).tril();
  std::vector<at::Tensor> fed;
  for (int64_t step = 0; step < 5; ++step) {
    opt.zero_grad();
    at::Tensor logits = ::torch::randn({2, 3, 5, 5}) * (1.0 + 10.0 * static_cast<double>(step));
    audit.record_attention("attn", logits, causal);
    fed.push_back(logits);
    attn(::torch::randn({3, 4})).pow(2).sum().backward();
    audit.step(opt);
  }
  ASSERT_EQ(sink.steps.size(), 5u);
  for (const StepRecords& s : sink.steps) {
    if (s.step % 2 != 0) {
      EXPECT_TRUE(s.attention.empty()) << s.step;
      continue;
    }
    ASSERT_EQ(s.attention.size(), 1u);
    const AttentionRecord& a = s.attention[0];
    EXPECT_EQ(a.node, "attn");
    EXPECT_EQ(a.step, s.step);
    ASSERT_EQ(a.heads.size(), 3u);
    const std::vector<Truth> want = truth(fed[static_cast<std::size_t>(s.step)], causal.expand({2, 3, 5, 5}));
    for (std::size_t h = 0; h < 3; ++h) {
      EXPECT_EQ(a.heads[h].queries, 10);
      EXPECT_NEAR(a.heads[h].max_logit, want[h].max_logit, 1e-5 * (1 + std::fabs(want[h].max_logit)));
      EXPECT_NEAR(a.heads[h].mean_entropy(), want[h].mean_entropy, 1e-5);
      EXPECT_EQ(a.heads[h].top_queries, want[h].top);
    }
  }
}

TEST(AuditAttention, AFloatMaskIsAddedAndCallsInAStepMerge) {
  ::torch::nn::Linear attn(4, 4);
  Capture sink;
  AuditOptions o;
  o.attention_every = 1;
  o.sink = &sink;
  Audit audit({{"attn", attn.ptr()}}, o);
  ::torch::optim::SGD opt(attn->parameters(), 0.1);
  const at::Tensor logits = ::torch::randn({1, 2, 4, 4});
  const at::Tensor additive = ::torch::zeros({4, 4}).masked_fill(::torch::ones({4, 4}, at::kBool).triu(1), -INFINITY);
  audit.record_attention("attn", logits, additive);
  audit.record_attention("attn", logits[0]);  // [heads, q, k], no mask: a second call merges
  attn(::torch::randn({3, 4})).pow(2).sum().backward();
  audit.step(opt);
  ASSERT_EQ(sink.steps.at(0).attention.size(), 1u);
  const HeadStats& h = sink.steps[0].attention[0].heads.at(0);
  EXPECT_EQ(h.queries, 8);
  EXPECT_EQ(h.fraction_queries, 7);  // the masked call's first query sees one key
  EXPECT_DOUBLE_EQ(h.max_logit, logits[0][0].max().item<double>());
}

// torch::nn::MultiheadAttention: the heads' entropies equal those of the weights the module
// itself returns for the same call, under its causal and padding masks.
TEST(AuditAttention, MultiheadAttentionMatchesTheModulesOwnWeights) {
  ::torch::manual_seed(1);
  ::torch::nn::MultiheadAttention mha(::torch::nn::MultiheadAttentionOptions(8, 2));
  Capture sink;
  AuditOptions o;
  o.attention_every = 1;
  o.sink = &sink;
  Audit audit({{"mha", mha.ptr()}}, o);
  ::torch::optim::SGD opt(mha->parameters(), 0.01);
  const at::Tensor x = ::torch::randn({5, 3, 8});  // [L, N, E]
  // LibTorch's module adds attn_mask to the logits: a float mask, -inf where hidden.
  const at::Tensor causal = ::torch::zeros({5, 5}).masked_fill(::torch::ones({5, 5}, at::kBool).triu(1), -INFINITY);
  at::Tensor padding = ::torch::zeros({3, 5}, at::kBool);
  padding[2].narrow(0, 3, 2).fill_(true);
  audit.record_attention("mha", *mha, x, x, causal, padding);
  auto [out, weights] = mha(x, x, x, padding, true, causal, false);  // weights [N, heads, L, S]
  out.pow(2).sum().backward();
  audit.step(opt);
  ASSERT_EQ(sink.steps.at(0).attention.size(), 1u);
  const auto& heads = sink.steps[0].attention[0].heads;
  ASSERT_EQ(heads.size(), 2u);
  ASSERT_EQ(weights.dim(), 4) << weights.sizes();
  const at::Tensor w = weights.detach().to(at::kDouble);
  const at::Tensor ent = -(w * at::log(w.clamp_min(1e-300))).sum(-1);  // [N, heads, L]
  for (int64_t h = 0; h < 2; ++h) {
    EXPECT_EQ(heads[static_cast<std::size_t>(h)].queries, 15);
    EXPECT_NEAR(heads[static_cast<std::size_t>(h)].mean_entropy(), ent.select(1, h).mean().item<double>(), 1e-5) << h;
  }
  // A bool attn_mask hides nothing in LibTorch's module (it is added, 0 or 1): refused, where
  // measuring it as a mask would describe attention the module does not compute.
  const at::Tensor bool_causal = ::torch::ones({5, 5}, at::kBool).triu(1);
  auto unmasked = std::get<1>(mha->forward(x, x, x, {}, true, bool_causal, false));
  EXPECT_GT(unmasked[0][0][0][4].item<double>(), 0.0);  // query 0 sees key 4: nothing hidden
  EXPECT_THROW(audit.record_attention("mha", *mha, x, x, bool_causal), Error);
  // Keys of its own are refused rather than measured wrongly.
  ::torch::nn::MultiheadAttention with_bias_kv(::torch::nn::MultiheadAttentionOptions(8, 2).add_bias_kv(true));
  EXPECT_THROW(audit.record_attention("mha", *with_bias_kv, x, x), Error);
}

TEST(AuditAttention, BadInputIsRefusedNamingTheNode) {
  ::torch::nn::Linear attn(4, 4);
  AuditOptions o;
  o.attention_every = 1;
  Audit audit({{"attn", attn.ptr()}}, o);
  const auto message = [&](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(message([&] { audit.record_attention("attn", ::torch::zeros({4, 4})); }),
              HasSubstr("attention of node 'attn': logits must be [batch, heads, queries, keys]"));
  EXPECT_THAT(message([&] { audit.record_attention("attn", ::torch::zeros({1, 2, 4, 4}), ::torch::ones({3, 3}, at::kBool)); }),
              HasSubstr("attention of node 'attn': mask of shape [3, 3] does not broadcast"));
  EXPECT_THAT(message([&] { audit.record_attention("attn", ::torch::zeros({1, 2, 4, 4}), ::torch::ones({4, 4}, at::kInt)); }),
              HasSubstr("mask must be bool"));
  EXPECT_THAT(message([&] { audit.record_attention("nope", ::torch::zeros({1, 2, 4, 4})); }), HasSubstr("nope"));
  AuditOptions bad;
  bad.attention_every = -1;
  EXPECT_THAT(message([&] { Audit a({{"attn", attn.ptr()}}, bad); }), HasSubstr("attention_every must be >= 0"));
}

}  // namespace
}  // namespace gradscope::torch
