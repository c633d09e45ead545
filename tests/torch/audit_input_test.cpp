// The module audit on bad input: undefined tensors, channel views and leakage pairs that do
// not fit the tapped tensor, a failing child of a Sequential, a parameter given another shape.
// Each is a gradscope::Error naming the node, never a raw LibTorch error with its backtrace.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <cmath>

#include "../common/error_of.h"
#include "audit_test_util.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

namespace nn = ::torch::nn;
using test::error_of;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using audit_test::mlp;

TEST(AuditInput, UndefinedTensorsNameTheNode) {
  auto net = mlp();
  AuditOptions o;
  o.sample_every = 2;
  Audit audit(net, o);
  EXPECT_EQ(error_of([&] { audit.tap("fc1", at::Tensor()); }), "audit: tap: node 'fc1': undefined tensor");
  EXPECT_EQ(error_of([&] { audit.tap(*net[2], at::Tensor()); }), "audit: tap: node 'fc2': undefined tensor");
  EXPECT_EQ(error_of([&] { audit.forward(net, at::Tensor()); }), "audit: forward: undefined input");
  audit.step([] {});  // step 1 is not audited: the same errors
  EXPECT_EQ(error_of([&] { audit.tap("fc1", at::Tensor()); }), "audit: tap: node 'fc1': undefined tensor");
  for (const Record& r : audit.records()) EXPECT_NE(r.site, Site::kActivation) << r.node;  // no tap recorded
}

TEST(AuditInput, AFailingChildOfASequentialIsNamed) {
  auto net = mlp();
  Audit audit(net);
  const std::string e = error_of([&] { audit.forward(net, at::ones({2, 5})); });  // fc1 takes 6
  EXPECT_THAT(e, StartsWith("audit: forward: child 'fc1' (torch::nn::LinearImpl): "));
  EXPECT_THAT(e, HasSubstr("2x5 and 6x8"));
  EXPECT_THAT(e, Not(HasSubstr("Exception raised from")));
}

TEST(AuditInput, ChannelViewsThatDoNotFitAreErrorsNamingTheNode) {
  auto net = mlp();
  AuditOptions o;
  o.channels["fc1"] = ChannelView{3, 1, {}};
  Audit audit(net, o);
  EXPECT_EQ(error_of([&] { audit.tap("fc1", at::ones({2, 8})); }),
            "audit: channel view of 'fc1': dim 3 out of range for a tensor with 2 dims");
  AuditOptions g;
  g.channels["fc1"] = ChannelView{1, 1, {{0, 4}, {4, 20}}};
  Audit grouped(net, g);
  EXPECT_EQ(error_of([&] { grouped.tap("fc1", at::ones({2, 8})); }),
            "audit: channel view of 'fc1': group [4, 20) out of range for 8 channels");
  AuditOptions empty;
  empty.channels["fc1"] = ChannelView{1, 1, {{4, 4}}};
  EXPECT_EQ(error_of([&] { Audit a(net, empty); }), "audit: channel view of 'fc1': group [4, 4) is empty");
  AuditOptions negative;
  negative.channels["fc1"] = ChannelView{1, 1, {{-2, 4}}};
  EXPECT_EQ(error_of([&] { Audit a(net, negative); }), "audit: channel view of 'fc1': group [-2, 4) is empty");
}

TEST(AuditInput, EmptyBatchesAndNoChannelsUnderAChannelView) {
  auto net = mlp();
  AuditOptions o;
  o.channels["fc1"] = ChannelView{1, 1, {}};
  Audit audit(net, o);
  audit.tap("fc1", at::ones({0, 8}));
  audit.step([] {});
  const std::vector<ChannelRecord> records = audit.channel_records();
  ASSERT_EQ(records.size(), 1u);
  const ChannelRecord& c = records[0];
  ASSERT_EQ(c.activation.size(), 8u);
  EXPECT_EQ(c.activation[0].count, 0);
  EXPECT_TRUE(std::isnan(c.effective_rank));
  // No channels at all: nothing per channel, no rank.
  audit.tap("fc1", at::ones({2, 0}));
  audit.step([] {});
  const std::vector<ChannelRecord> none = audit.channel_records();
  ASSERT_EQ(none.size(), 2u);
  EXPECT_TRUE(none[1].activation.empty());
  EXPECT_TRUE(std::isnan(none[1].effective_rank));
}

// The rules add channels up as each step ends, so a channel view keeps one channel count; a
// tap that changes it throws before recording anything.
TEST(AuditInput, AChannelViewKeepsItsChannelCount) {
  auto net = mlp();
  AuditOptions o;
  o.channels["fc1"] = ChannelView{1, 1, {}};
  Audit audit(net, o);
  audit.tap("fc1", at::ones({2, 8}));
  audit.step([] {});
  EXPECT_EQ(error_of([&] { audit.tap("fc1", at::ones({2, 5})); }),
            "audit: channel view of 'fc1': 5 channels, but 8 at an earlier sampled step; a channel view needs "
            "one channel count");
  audit.step([] {});
  EXPECT_EQ(audit.channel_records().size(), 1u);
  EXPECT_EQ(audit.report().nodes.at(0).channels, 8);
}

TEST(AuditInput, LeakagePairsNeedTheSameSamples) {
  nn::Linear a(6, 5), b(6, 5);
  AuditOptions o;
  o.leakage_pairs = {{"a", "b"}};
  o.leakage_every = 1;
  Audit audit({{"a", a.ptr()}, {"b", b.ptr()}}, o);
  audit.tap("a", a->forward(at::randn({40, 6})));
  EXPECT_EQ(error_of([&] { audit.tap("b", b->forward(at::randn({20, 6}))); }),
            "audit: tap: node 'b': 20 samples, but 'a' (its leakage pair) had 40 at this step");
  EXPECT_EQ(error_of([&] { audit.tap("b", at::ones({})); }),
            "audit: tap: node 'b': a leakage pair needs a tensor with a sample dimension, got a scalar");
  audit.tap("b", b->forward(at::randn({40, 6})));
  audit.step([] {});
  EXPECT_EQ(audit.similarity_records().size(), 2u);
}

TEST(AuditInput, GradientSnrOfAParameterGivenAnotherShapeIsAnError) {
  ::torch::manual_seed(0);
  nn::Linear fc(3, 2);
  AuditOptions o;
  o.gradient_snr = true;
  Audit audit({{"fc", fc.ptr()}}, o);
  fc->forward(at::randn({4, 3})).sum().backward();
  audit.step([] {});
  fc->weight.set_data(at::randn({5, 3}));
  fc->bias.set_data(at::randn({5}));
  for (at::Tensor& p : fc->parameters()) p.mutable_grad().reset();
  fc->forward(at::randn({4, 3})).sum().backward();
  EXPECT_EQ(error_of([&] { audit.step([] {}); }),
            "audit: parameter 'fc.weight': gradient shape changed from [2, 3] to [5, 3] since an earlier "
            "audited step; gradient_snr needs one shape");
}

}  // namespace
}  // namespace gradscope::torch
