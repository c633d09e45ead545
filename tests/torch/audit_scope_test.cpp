// Scopes inside a node, roll-up of their flags, and the channel view.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include "gradscope/core/error.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

namespace nn = ::torch::nn;

// encoder -> backbone (Sequential of 4 blocks, each attn + mlp), plus a head.
struct BlockImpl : nn::Module {
  nn::Linear attn{nullptr}, mlp{nullptr};
  BlockImpl() {
    attn = register_module("attn", nn::Linear(4, 4));
    mlp = register_module("mlp", nn::Linear(4, 4));
  }
  at::Tensor forward(const at::Tensor& x) { return mlp->forward(attn->forward(x).tanh()); }
};
TORCH_MODULE(Block);

struct EncoderImpl : nn::Module {
  nn::Sequential backbone;
  EncoderImpl() {
    for (int i = 0; i < 4; ++i) backbone->push_back(Block());
    register_module("backbone", backbone);
  }
};
TORCH_MODULE(Encoder);

struct Model : nn::Module {
  Encoder encoder;
  nn::Linear head{nullptr};
  Model() {
    register_module("encoder", encoder);
    head = register_module("head", nn::Linear(4, 1));
  }
};

std::vector<std::string> ids(const Audit& a) { return a.node_ids(); }

TEST(AuditScope, AutoDescendsThroughSingleChildWrappers) {
  auto m = std::make_shared<Model>();
  Audit audit(std::static_pointer_cast<nn::Module>(m));
  EXPECT_EQ(ids(audit), (std::vector<std::string>{"encoder", "encoder/backbone.0", "encoder/backbone.1",
                                                   "encoder/backbone.2", "encoder/backbone.3", "head"}));
}

TEST(AuditScope, DepthPatternsAndMaxModules) {
  auto m = std::make_shared<Model>();
  AuditOptions o;
  o.scopes["encoder"] = NodeScope::matching({"backbone.*.attn"});
  o.scopes["head"] = NodeScope::none();
  EXPECT_EQ(ids(Audit(std::static_pointer_cast<nn::Module>(m), o)),
            (std::vector<std::string>{"encoder", "encoder/backbone.0.attn", "encoder/backbone.1.attn",
                                      "encoder/backbone.2.attn", "encoder/backbone.3.attn", "head"}));
  o.scopes["encoder"] = NodeScope::to_depth(1);
  EXPECT_EQ(ids(Audit(std::static_pointer_cast<nn::Module>(m), o)),
            (std::vector<std::string>{"encoder", "encoder/backbone", "head"}));
  NodeScope limited = NodeScope::to_depth(3);
  limited.max_modules = 3;
  o.scopes["encoder"] = limited;
  Audit truncated(std::static_pointer_cast<nn::Module>(m), o);
  EXPECT_EQ(ids(truncated).size(), 5u);
  ASSERT_EQ(truncated.warnings().size(), 1u);
  EXPECT_THAT(truncated.warnings()[0], ::testing::HasSubstr("matched 8 submodules, kept the first 3"));
}

TEST(AuditScope, PerCallBeatsRegisteredBeatsAuto) {
  register_scope<EncoderImpl>(NodeScope::to_depth(1));
  auto m = std::make_shared<Model>();
  EXPECT_EQ(ids(Audit(std::static_pointer_cast<nn::Module>(m))),
            (std::vector<std::string>{"encoder", "encoder/backbone", "head"}));
  AuditOptions o;
  o.scopes["encoder"] = NodeScope::none();
  EXPECT_EQ(ids(Audit(std::static_pointer_cast<nn::Module>(m), o)), (std::vector<std::string>{"encoder", "head"}));
  register_scope<EncoderImpl>(NodeScope::automatic());  // leave the registry as found
}

TEST(AuditScope, AScopeForAnIdThatIsNoNodeIsAnError) {
  auto m = std::make_shared<Model>();
  for (const std::string id : {"enc", "encoder/backbone.0"}) {  // a typo; a submodule id
    AuditOptions o;
    o.scopes[id] = NodeScope::none();
    try {
      Audit audit(std::static_pointer_cast<nn::Module>(m), o);
      FAIL() << "a scope for '" << id << "' must be an Error";
    } catch (const Error& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("scope for unknown node id '" + id +
                                                 "' (scopes are keyed by node id; nodes: "
                                                 "'encoder', 'head')"));
    }
  }
}

TEST(AuditScope, SubmoduleFlagsRollUpToTheNode) {
  ::torch::manual_seed(0);
  auto m = std::make_shared<Model>();
  // Block 1's attention is starved: its weights are multiplied so that nothing reaches it.
  ::torch::optim::SGD opt(m->parameters(), 0.01);
  Audit audit(std::static_pointer_cast<nn::Module>(m));
  for (int s = 0; s < 3; ++s) {
    opt.zero_grad();
    at::Tensor h = at::randn({8, 4});
    for (std::size_t i = 0; i < 4; ++i) {
      auto block = m->encoder->backbone[i]->as<BlockImpl>();
      h = audit.tap(*block, i == 1 ? block->mlp->forward(block->attn->forward(h).tanh() * 1e-12) : block->forward(h));
    }
    m->head->forward(audit.tap("encoder", h)).sum().backward();
    audit.step(opt);
  }
  // Scaling block 1's attention output by 1e-12 starves everything before it in backward
  // (block 0); block 1 itself keeps a normal gradient on its mlp bias.
  const Report r = audit.report();
  ASSERT_EQ(r.nodes.size(), 6u);
  EXPECT_EQ(r.nodes[2].node, "encoder/backbone.1");
  EXPECT_EQ(r.nodes[1].flags.join(), "VANISHING");
  EXPECT_EQ(r.nodes[2].flags.join(), "HEALTHY");
  EXPECT_EQ(r.nodes[3].flags.join(), "HEALTHY");
  EXPECT_EQ(r.nodes[4].flags.join(), "HEALTHY");
  const NodeReport& enc = r.nodes[0];
  ASSERT_EQ(enc.flags.join(), "VANISHING");  // rolled up: its own mean is dominated by blocks 2-3
  EXPECT_EQ(enc.evidence.at(0).detail, "in: backbone.0");
  EXPECT_EQ(enc.evidence.at(0).value, 1);
}

TEST(ChannelView, DeadChannelsEffectiveRankAndLeakage) {
  ::torch::manual_seed(0);
  nn::Sequential net({{"fc", nn::Linear(8, 12)}, {"relu", nn::ReLU()}, {"out", nn::Linear(12, 1)}});
  {
    ::torch::NoGradGuard g;
    net[0]->as<nn::Linear>()->bias.narrow(0, 0, 4).fill_(-100.0);  // 4 of 12 channels never fire
  }
  AuditOptions o;
  o.channels["fc"] = ChannelView{1, 1, {{4, 8}, {8, 12}}};
  Audit audit(net, o);
  ::torch::optim::SGD opt(net->parameters(), 0.0);
  for (int s = 0; s < 3; ++s) {
    opt.zero_grad();
    audit.forward(net, at::randn({32, 8})).sum().backward();
    audit.step(opt);
  }
  const Report r = audit.report();
  const NodeReport& fc = r.nodes.at(0);
  EXPECT_EQ(fc.flags_label(), "DEAD_CHANNELS(4)");
  EXPECT_EQ(fc.channels, 12);
  EXPECT_GT(fc.effective_rank, 1.0);
  EXPECT_LE(fc.effective_rank, 8.0);  // 8 live channels at most carry independent signal
  EXPECT_EQ(audit.channel_records().size(), 3u);
  EXPECT_EQ(audit.similarity_records().size(), 3u);  // one pair of groups, every step
}

TEST(ChannelView, IdenticalBranchesLeak) {
  ::torch::manual_seed(0);
  nn::Linear a(6, 5), b(6, 5);
  {
    ::torch::NoGradGuard g;
    b->weight.copy_(a->weight * 2);  // same function up to scale
    b->bias.copy_(a->bias * 2);
  }
  nn::Linear c(6, 5);
  AuditOptions o;
  o.leakage_pairs = {{"a", "b"}, {"a", "c"}};
  o.leakage_every = 1;
  Audit audit({{"a", a.ptr()}, {"b", b.ptr()}, {"c", c.ptr()}}, o);
  ::torch::optim::SGD opt(std::vector<at::Tensor>{a->weight}, 0.0);
  for (int s = 0; s < 2; ++s) {
    const at::Tensor x = at::randn({40, 6});
    const at::Tensor ya = audit.tap("a", a->forward(x));
    const at::Tensor yb = audit.tap("b", b->forward(x));
    const at::Tensor yc = audit.tap("c", c->forward(x));
    (ya + yb + yc).sum().backward();
    audit.step(opt);
  }
  const Report r = audit.report();
  EXPECT_EQ(r.nodes.at(0).flags.join(), "LEAKAGE");
  EXPECT_NEAR(r.nodes.at(0).evidence.at(0).value, 1.0, 1e-9);
  EXPECT_EQ(r.nodes.at(0).evidence.at(0).detail, "with b");
  EXPECT_EQ(r.nodes.at(1).flags.join(), "LEAKAGE");
  EXPECT_FALSE(r.nodes.at(2).flags.contains(Flag::kLeakage));
}

TEST(ChannelView, UnknownIdsInOptionsAreErrors) {
  nn::Linear a(2, 2);
  AuditOptions o;
  o.channels["b"] = ChannelView{};
  EXPECT_THROW(Audit({{"a", a.ptr()}}, o), Error);
  AuditOptions p;
  p.leakage_pairs = {{"a", "zz"}};
  EXPECT_THROW(Audit({{"a", a.ptr()}}, p), Error);
}

}  // namespace
}  // namespace gradscope::torch
