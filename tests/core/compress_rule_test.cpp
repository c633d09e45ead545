// The compression rule (core/compress/rule.h): predicted losses by hand, dead units first, the more
// sensitive node keeps more bits, budgets that cannot be met, and run dynamics from records.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "../common/error_of.h"
#include "gradscope/core/compress/rule.h"

namespace gradscope::compress {
namespace {

using ::testing::HasSubstr;
using test::error_of;

// A node of `units` units x `inputs` inputs, every weight at most 1 in size, unit energy 1,
// activation and gradient energy 1, nothing dead.
NodeProfile node(const std::string& name, int64_t units, int64_t inputs, double grad_sq) {
  NodeProfile p;
  p.node = name;
  p.weight_shape = {units, inputs};
  p.bias = units;
  p.batch = 4;
  p.grad_sq = grad_sq;
  p.param_elements = units * inputs + units;
  p.steps = 10;
  p.max_abs.assign(units, 1.0);
  p.weight_sq.assign(units, 1.0);
  p.act_sq.assign(units, 1.0);
  p.out_grad_sq.assign(units, 1.0);
  p.zero_frac.assign(units, 0.0);
  return p;
}

std::vector<NodeProfile> chain() {
  std::vector<NodeProfile> p = {node("fc1", 8, 8, 1.0), node("fc2", 4, 8, 1.0)};
  p[0].next = "fc2";
  p[0].next_fan = 1;
  return p;
}

TEST(CompressRule, PredictedLossIsFisherTimesRoundingNoise) {
  const NodeProfile p = node("fc", 2, 3, 0.5);
  NodeDecision d;
  d.precision = Precision::kInt8;
  // F = batch x grad_sq / elements = 4 x 0.5 / 8; noise per unit = 3 x (1/127)^2 / 12.
  const double f = 4 * 0.5 / 8, noise = 3 * std::pow(1.0 / 127, 2) / 12;
  EXPECT_NEAR(predicted_loss(p, d), 0.5 * f * 2 * noise, 1e-15);
  d.precision = Precision::kInt4;
  EXPECT_NEAR(predicted_loss(p, d), 0.5 * f * 2 * 3 * std::pow(1.0 / 7, 2) / 12, 1e-15);
  d.precision = Precision::kFp32;
  EXPECT_EQ(predicted_loss(p, d), 0.0);
  // Pruning unit 0: 0.5 x batch^2 x E[a^2] E[delta^2] = 8, and unit 1 stays FP32.
  d.pruned_units = {0};
  EXPECT_NEAR(predicted_loss(p, d), 8.0, 1e-12);
}

TEST(CompressRule, DeadUnitsArePrunedFirstAndCostNothing) {
  std::vector<NodeProfile> p = chain();
  p[0].zero_frac[5] = 1.0;
  p[0].zero_frac[2] = 0.995;
  // A budget just under FP32: pruning the two dead units (free) is the cheapest way there.
  const int64_t fp32 = fp32_recipe(p).bytes;
  const Recipe r = make_recipe(p, Budget::bytes(fp32 - 1));
  EXPECT_LE(r.bytes, fp32 - 1);
  EXPECT_THAT(r.nodes[0].pruned_units, ::testing::ElementsAre(2, 5));
  EXPECT_EQ(r.nodes[0].precision, Precision::kFp32);
  EXPECT_EQ(r.predicted_loss, 0.0);
  EXPECT_THAT(r.nodes[0].premise, HasSubstr("2 units dead"));
  EXPECT_THAT(r.nodes[0].action, HasSubstr("prune 2 of 8 units (2 dead"));
  // The loss bound 0 allows exactly the free moves.
  const Recipe z = make_recipe(p, Budget::loss(0.0));
  EXPECT_THAT(z.nodes[0].pruned_units, ::testing::ElementsAre(2, 5));
  EXPECT_EQ(z.nodes[1].precision, Precision::kFp32);
}

TEST(CompressRule, TheMoreSensitiveNodeKeepsMoreBits) {
  // Two unconnected nodes of equal size; b's gradient energy is 1000x a's.
  std::vector<NodeProfile> p = {node("a", 8, 16, 1e-3), node("b", 8, 16, 1.0)};
  // Room for one node at INT8 and the other at INT4: 128 / 2 + 8 x 4 + 8 x 2 = 112 and 176.
  const Recipe r = make_recipe(p, Budget::bytes(112 + 176));
  EXPECT_EQ(r.bytes, 112 + 176);
  EXPECT_EQ(r.nodes[0].precision, Precision::kInt4);
  EXPECT_EQ(r.nodes[1].precision, Precision::kInt8);
  EXPECT_THAT(r.nodes[1].premise, HasSubstr("rank 1 of 2"));
  EXPECT_THAT(r.nodes[0].premise, HasSubstr("rank 2 of 2"));
  // Swap the gradients and the choice follows them.
  std::swap(p[0].grad_sq, p[1].grad_sq);
  const Recipe s = make_recipe(p, Budget::bytes(112 + 176));
  EXPECT_EQ(s.nodes[0].precision, Precision::kInt8);
  EXPECT_EQ(s.nodes[1].precision, Precision::kInt4);
  EXPECT_EQ(make_recipe(p, Budget::bytes(288), RuleOptions{false, true}).method, "dynamics-no-fisher");
}

TEST(CompressRule, BudgetsThatCannotBeMetNameTheSmallestSize) {
  const std::vector<NodeProfile> p = chain();
  // fc1 keeps 1 unit: 8 INT2 weights = 2 bytes + scale 4 + bias 2. fc2 then has 4 x 1 inputs:
  // FP16 (8 + 8 biases) beats INT2 (1 + 16 scales + 8).
  EXPECT_EQ(smallest_bytes(p), 8 + 16);
  EXPECT_EQ(error_of([&] { make_recipe(p, Budget::bytes(23)); }),
            "budget of 23 bytes cannot be met: the smallest reachable size is 24 bytes (every node at its "
            "smallest precision, one unit left in each prunable node)");
  const Recipe r = make_recipe(p, Budget::bytes(24));
  EXPECT_EQ(r.bytes, 24);
  EXPECT_EQ(r.nodes[0].precision, Precision::kInt2);
  EXPECT_EQ(r.nodes[0].pruned_units.size(), 7u);
  EXPECT_EQ(r.nodes[1].precision, Precision::kFp16);
  EXPECT_THAT(error_of([&] { make_recipe(p, Budget{}); }), HasSubstr("give either"));
  EXPECT_THAT(error_of([&] { make_recipe(p, Budget{100, 0.1}); }), HasSubstr("give either"));
  EXPECT_THAT(error_of([&] { make_recipe(p, Budget::loss(-1)); }), HasSubstr("is < 0"));
}

TEST(CompressRule, OneElementNodeIsNeverMadeLarger) {
  // One weight: INT8 and INT4 take 1 byte + a 4-byte scale, more than FP32's 4 bytes.
  NodeProfile one = node("tiny", 1, 1, 1.0);
  one.bias = 0;
  one.param_elements = 1;
  EXPECT_EQ(smallest_bytes({one}), 2);  // FP16
  const Recipe r = make_recipe({one}, Budget::bytes(3));
  EXPECT_EQ(r.nodes[0].precision, Precision::kFp16);
  EXPECT_EQ(r.bytes, 2);
  EXPECT_THAT(error_of([&] { make_recipe({one}, Budget::bytes(1)); }), HasSubstr("smallest reachable size is 2 bytes"));
}

TEST(CompressRule, MissingDynamicsAreErrorsNamingTheNode) {
  std::vector<NodeProfile> p = chain();
  p[1].grad_sq = NodeProfile::kNone;
  EXPECT_THAT(error_of([&] { make_recipe(p, Budget::bytes(100)); }), HasSubstr("node 'fc2': no parameter-gradient"));
  p = chain();
  p[0].act_sq.clear();
  EXPECT_THAT(error_of([&] { make_recipe(p, Budget::bytes(100)); }), HasSubstr("node 'fc1': no per-unit activation"));
  p = chain();
  p[0].max_abs.clear();
  EXPECT_THAT(error_of([&] { make_recipe(p, Budget::bytes(100)); }), HasSubstr("node 'fc1': no per-unit weight"));
}

TEST(CompressRule, RunDynamicsFromRecords) {
  std::vector<NodeProfile> p = chain();
  std::vector<Record> records;
  for (int step = 0; step < 2; ++step) {
    Stats g;
    g.count = g.finite = 72;
    g.sum_sq = step == 0 ? 2.0 : 4.0;
    records.push_back({step, "fc1", Site::kParamGrad, g});
    Stats w, u;
    w.count = w.finite = u.count = u.finite = 72;
    w.sum_sq = 100.0;  // L2 10
    u.sum_sq = 0.01;   // L2 0.1
    records.push_back({step, "fc1", Site::kParam, w});
    records.push_back({step, "fc1", Site::kUpdate, u});
    records.push_back({step, "other", Site::kParamGrad, g});
  }
  add_run_dynamics(p, records);
  EXPECT_DOUBLE_EQ(p[0].grad_sq, 3.0);
  EXPECT_EQ(p[0].param_elements, 72);
  EXPECT_EQ(p[0].steps, 2);
  EXPECT_NEAR(p[0].update_ratio, 0.01, 1e-12);
  EXPECT_DOUBLE_EQ(p[1].grad_sq, 1.0);  // untouched: no fc2 records
}

}  // namespace
}  // namespace gradscope::compress
