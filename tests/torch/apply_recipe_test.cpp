// gradscope::compress::apply on real modules: quantised values by hand, pruning equal to
// removing the units, sizes as computed, recipes for another model refused before any change,
// and profile_model on a trained model with a planted dead unit.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/adam.h>
#include <torch/utils.h>

#include <ATen/ATen.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "../common/compress_fixture.h"
#include "../common/error_of.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/io/compress/rows_json.h"
#include "gradscope/torch/compress/apply_recipe.h"

namespace gradscope::compress {
namespace {

namespace nn = ::torch::nn;
// Always qualified: torch modules derive from std::enable_shared_from_this, so a bare apply()
// also finds std::apply by argument-dependent lookup.
using ::testing::HasSubstr;
using test::error_of;

nn::Sequential mlp() {
  ::torch::manual_seed(3);
  return nn::Sequential({{"fc1", nn::Linear(3, 4)}, {"relu", nn::ReLU()}, {"fc2", nn::Linear(4, 2)}});
}

// A profile of `net`'s two Linear nodes, shapes only.
std::vector<NodeProfile> shapes() { return test::linear_chain(3, 4, 2); }

at::Tensor weight(nn::Sequential& net, const std::string& name) {
  return *net->named_parameters().find(name + ".weight");
}

TEST(ApplyRecipe, Int8AndInt4QuantisePerUnitSymmetrically) {
  nn::Sequential net = mlp();
  {
    ::torch::NoGradGuard g;
    weight(net, "fc1").copy_(at::tensor({1.0f, -0.55f, 0.26f, 0.0f, 0.0f, 0.0f, 2.0f, 0.3f, -2.0f, 0.1f, 0.05f, 0.0f}).view({4, 3}));
  }
  Recipe r = uniform_recipe(shapes(), Precision::kInt4);
  const Applied a = compress::apply(*net.ptr(), r);
  const at::Tensor w = weight(net, "fc1");
  // Unit 0: scale 1/7; -0.55 -> round(-3.85) = -4 -> -4/7; 0.26 -> round(1.82) = 2 -> 2/7.
  EXPECT_FLOAT_EQ(w[0][0].item<float>(), 1.0f);
  EXPECT_NEAR(w[0][1].item<float>(), -4.0 / 7, 1e-6);
  EXPECT_NEAR(w[0][2].item<float>(), 2.0 / 7, 1e-6);
  // An all-zero unit stays zero (no division by a zero scale).
  EXPECT_EQ(w[1].abs().sum().item<float>(), 0.0f);
  // Unit 2: scale 2/7: 0.3 -> round(1.05) = 1 -> 2/7.
  EXPECT_NEAR(w[2][1].item<float>(), 2.0 / 7, 1e-6);
  EXPECT_FLOAT_EQ(w[2][2].item<float>(), -2.0f);
  EXPECT_EQ(a.bytes, r.bytes);
  EXPECT_EQ(a.fp32_bytes, r.fp32_bytes);
  EXPECT_EQ(a.nodes[0].kept_weights, 12);

  nn::Sequential n8 = mlp();
  {
    ::torch::NoGradGuard g;
    weight(n8, "fc1").copy_(at::tensor({1.0f, -0.55f, 0.26f, 0.0f, 0.0f, 0.0f, 2.0f, 0.3f, -2.0f, 0.1f, 0.05f, 0.0f}).view({4, 3}));
  }
  compress::apply(*n8.ptr(), uniform_recipe(shapes(), Precision::kInt8));
  // 0.26 x 127 = 33.02 -> 33/127.
  EXPECT_NEAR(weight(n8, "fc1")[0][2].item<float>(), 33.0 / 127, 1e-6);
  EXPECT_NEAR(weight(n8, "fc1")[3][1].item<float>(), 0.1 * std::round(0.05 * 127 / 0.1) / 127, 1e-6);
}

TEST(ApplyRecipe, Fp16RoundsWeightsAndBiases) {
  nn::Sequential net = mlp();
  const at::Tensor before = weight(net, "fc1").clone();
  compress::apply(*net.ptr(), uniform_recipe(shapes(), Precision::kFp16));
  EXPECT_TRUE(weight(net, "fc1").equal(before.to(at::kHalf).to(at::kFloat)));
}

TEST(ApplyRecipe, PruningEqualsRemovingTheUnits) {
  nn::Sequential net = mlp();
  const at::Tensor x = at::randn({5, 3});
  // The same model without fc1's units 1 and 3: slice them out of fc1 and out of fc2's inputs.
  nn::Linear s1(3, 2), s2(2, 2);
  {
    ::torch::NoGradGuard g;
    const at::Tensor keep = at::tensor({0, 2}, at::kLong);
    s1->weight.copy_(weight(net, "fc1").index_select(0, keep));
    s1->bias.copy_(net->named_parameters().find("fc1.bias")->index_select(0, keep));
    s2->weight.copy_(weight(net, "fc2").index_select(1, keep));
    s2->bias.copy_(*net->named_parameters().find("fc2.bias"));
  }
  const at::Tensor small = s2->forward(s1->forward(x).relu());
  Recipe r = fp32_recipe(shapes());
  r.nodes[0].pruned_units = {1, 3};
  recompute_bytes(r);
  const Applied a = compress::apply(*net.ptr(), r);
  EXPECT_TRUE(net->forward(x).allclose(small, 0, 1e-6));
  // fc1: 2 units x 3 x 4 + 2 biases x 4 = 32; fc2: 2 x 2 inputs x 4 + 2 x 4 = 24.
  EXPECT_EQ(a.bytes, 56);
  EXPECT_EQ(a.bytes, r.bytes);
  EXPECT_EQ(a.nodes[0].kept_units, 2);
  EXPECT_EQ(a.nodes[1].kept_weights, 4);
}

TEST(ApplyRecipe, MagnitudeBaselineKeepsTheLargestWeights) {
  nn::Sequential net = mlp();
  const Recipe r = magnitude_recipe(shapes(), Precision::kFp32, 100);
  const Applied a = compress::apply(*net.ptr(), r);
  const auto kept = static_cast<int64_t>(r.magnitude_keep * 20);
  EXPECT_EQ(a.nodes[0].kept_weights + a.nodes[1].kept_weights, kept);
  const int64_t nonzero = weight(net, "fc1").ne(0).sum().item<int64_t>() + weight(net, "fc2").ne(0).sum().item<int64_t>();
  EXPECT_EQ(nonzero, kept);
  EXPECT_LE(a.bytes, 100);
}

TEST(ApplyRecipe, Int4OnAOneElementTensorIsExactAndCountedHonestly) {
  nn::Linear one(1, 1);
  {
    ::torch::NoGradGuard g;
    one->weight.fill_(0.3f);
    one->bias.fill_(0.1f);
  }
  nn::Sequential net({{"only", one}});
  NodeProfile p;
  p.node = "only";
  p.weight_shape = {1, 1};
  p.bias = 1;
  const Applied a = compress::apply(*net.ptr(), uniform_recipe({p}, Precision::kInt4));
  // scale 0.3 / 7, q = 7: the one value is exact.
  EXPECT_FLOAT_EQ(one->weight.item<float>(), 0.3f);
  // 1 byte for 4 bits, a 4-byte scale, a 2-byte FP16 bias: 7 bytes (FP32: 8).
  EXPECT_EQ(a.bytes, 7);
  EXPECT_EQ(a.fp32_bytes, 8);
  EXPECT_NEAR(one->bias.item<float>(), at::tensor(0.1f).to(at::kHalf).to(at::kFloat).item<float>(), 0);
}

TEST(ApplyRecipe, ARecipeForAnotherModelIsRefusedBeforeAnyChange) {
  nn::Sequential net = mlp();
  const at::Tensor before = weight(net, "fc1").clone();
  std::vector<NodeProfile> p = shapes();
  p[1].node = "head";
  p[0].next = "head";
  EXPECT_THAT(error_of([&] { compress::apply(*net.ptr(), uniform_recipe(p, Precision::kInt4)); }),
              HasSubstr("node(s) 'head' not in the model (its nodes: fc1, fc2)"));
  p = shapes();
  p[0].weight_shape = {4, 5};
  EXPECT_THAT(error_of([&] { compress::apply(*net.ptr(), uniform_recipe(p, Precision::kInt4)); }),
              HasSubstr("shapes differ for 'fc1' (recipe weight [4, 5] bias 4, model weight [4, 3] bias 4)"));
  EXPECT_TRUE(weight(net, "fc1").equal(before));
  Recipe r = fp32_recipe(shapes());
  r.nodes[0].pruned_units = {9};
  EXPECT_THAT(error_of([&] { compress::apply(*net.ptr(), r); }), HasSubstr("pruned unit 9 is not in 0..3"));
  r.nodes[0].pruned_units = {1, 1};
  EXPECT_THAT(error_of([&] { compress::apply(*net.ptr(), r); }), HasSubstr("unit 1 is pruned twice"));
  {
    ::torch::NoGradGuard g;
    weight(net, "fc2")[0][0] = NAN;
  }
  EXPECT_THAT(error_of([&] { compress::apply(*net.ptr(), uniform_recipe(shapes(), Precision::kInt8)); }),
              HasSubstr("'fc2': weight holds NaN or Inf"));
  EXPECT_TRUE(weight(net, "fc1").equal(before));
}

TEST(ProfileModel, ShapesChainDynamicsAndADeadUnit) {
  ::torch::manual_seed(1);
  nn::Sequential net({{"fc1", nn::Linear(6, 8)}, {"relu", nn::ReLU()}, {"fc2", nn::Linear(8, 3)}});
  {
    ::torch::NoGradGuard g;
    net->named_parameters().find("fc1.bias")->index_put_({5}, -100.0f);  // unit 5 never fires
  }
  torch::AuditOptions o;
  o.channels_all_nodes = torch::ChannelView{1, 2, {}};
  torch::Audit audit(net, o);
  ::torch::optim::Adam opt(net->parameters(), ::torch::optim::AdamOptions(1e-2));
  for (int step = 0; step < 6; ++step) {
    opt.zero_grad();
    const at::Tensor x = at::randn({16, 6});
    audit.forward(net, x).pow(2).mean().backward();
    audit.step(opt);
  }
  const std::vector<NodeProfile> p = profile_model(*net.ptr(), audit, 16);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].node, "fc1");
  EXPECT_EQ(p[0].weight_shape, (std::vector<int64_t>{8, 6}));
  EXPECT_EQ(p[0].next, "fc2");
  EXPECT_EQ(p[0].next_fan, 1);
  EXPECT_EQ(p[1].next, "");
  ASSERT_EQ(p[0].zero_frac.size(), 8u);
  EXPECT_EQ(p[0].zero_frac[5], 1.0);
  EXPECT_EQ(p[0].act_sq[5], 0.0);
  EXPECT_LT(p[0].zero_frac[0], 1.0);
  EXPECT_EQ(p[0].out_grad_sq.size(), 8u);
  EXPECT_EQ(p[0].steps, 6);
  EXPECT_GT(p[0].grad_sq, 0.0);
  EXPECT_EQ(p[0].param_elements, 56);
  const at::Tensor w = weight(net, "fc1");
  EXPECT_NEAR(p[0].max_abs[2], w[2].abs().max().item<double>(), 1e-7);
  EXPECT_NEAR(p[0].weight_sq[2], w[2].pow(2).sum().item<double>(), 1e-6);
  EXPECT_EQ(p[0].batch, 16);
  // The rule prunes the dead unit for free.
  const Recipe r = make_recipe(p, Budget::bytes(fp32_recipe(p).bytes));
  EXPECT_THAT(r.nodes[0].pruned_units, ::testing::Contains(5));
  EXPECT_THAT(error_of([&] { profile_model(*net.ptr(), audit, 0); }), HasSubstr("batch 0 is < 1"));
}

}  // namespace
}  // namespace gradscope::compress

namespace gradscope::compress {
namespace {

TEST(ApplyRows, QuantisesPrunesAndRefusesOtherShapes) {
  at::Tensor table = at::tensor({1.0f, -0.55f, 0.0f, 0.0f, 0.3f, 2.0f, 4.0f, 4.0f, 4.0f}).view({3, 3});
  EmbeddingRows rows(3, 3);
  rows.expose(0, 0);
  rows.expose(1, 0);  // row 2 never exposed
  rows.count_lookups(0, 5, 1);
  const RowProfile p = row_profile("item", table, rows);
  EXPECT_EQ(p.lookups[0], 4.0);
  EXPECT_FALSE(p.exposed[2]);
  // Fallback: the mean of the exposed rows 0 and 1.
  EXPECT_NEAR(p.fallback[0], 0.5, 1e-7);
  EXPECT_NEAR(p.fallback[2], 1.0, 1e-7);
  EXPECT_NEAR(p.fallback_sq[2], 3.5 * 3.5 + 4.125 * 4.125 + 3.0 * 3.0, 1e-5);
  EXPECT_NEAR(p.sum_sq[1], 0.09 + 4.0, 1e-6);
  RowRecipe r = uniform_row_recipe(p, kRowInt4);
  r.level = {kRowInt4, kRowInt8, kRowPruned};
  const int64_t bytes = apply_rows(table, r);
  EXPECT_EQ(bytes, (2 + 4) + (3 + 4) + 1 + 12);
  // Row 0 at INT4: scale 1/7, -0.55 -> -4/7. Row 1 at INT8: scale 2/127. Row 2: the fallback.
  EXPECT_NEAR(table[0][1].item<float>(), -4.0 / 7, 1e-6);
  EXPECT_NEAR(table[1][1].item<float>(), std::round(0.3 * 127 / 2) * 2 / 127, 1e-6);
  EXPECT_NEAR(table[2][0].item<float>(), 0.5, 1e-6);
  at::Tensor other = at::zeros({4, 3});
  EXPECT_THAT(error_of([&] { apply_rows(other, r); }), HasSubstr("recipe for [3, 3], table is [4, 3]"));
  at::Tensor bad = at::zeros({3, 3});
  bad[0][0] = NAN;
  EXPECT_THAT(error_of([&] { apply_rows(bad, r); }), HasSubstr("NaN or Inf"));
  EXPECT_THAT(error_of([&] { row_profile("item", other, rows); }), HasSubstr("differ in shape"));
}

TEST(ApplyRows, ASavedRunsRowsGiveTheInMemoryRecipe) {
  ::torch::manual_seed(5);
  const at::Tensor table = at::randn({50, 8});
  EmbeddingRows rows(50, 8);
  for (int64_t i = 0; i < 40; ++i) {  // rows 40..49 never exposed
    rows.expose(i, 0);
    rows.count_lookups(i, 3 + (i * 7) % 13, i % 3);  // lookups >= negatives
  }
  const RowProfile p = row_profile("item", table, rows);
  const std::string dir = ::testing::TempDir() + "gs-rows-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  save_row_profiles(dir, {p});
  const std::vector<RowProfile> saved = load_run_row_profiles(dir);
  ASSERT_EQ(saved.size(), 1u);
  for (int64_t budget : {1200, 900, 400}) {
    const RowRecipe a = make_row_recipe(p, budget), b = make_row_recipe(saved[0], budget);
    EXPECT_EQ(a.level, b.level) << budget;
    EXPECT_EQ(render_row_recipes_json({a}), render_row_recipes_json({b})) << budget;
  }
  std::filesystem::remove_all(dir);
}

TEST(MergeRows, NearIdenticalRowsShareOneStoredRowAndTheSizeCountsIt) {
  // Rows 0 and 1 differ by 0.5% (cosine ~1, norms within 1%); row 2 is the same direction at
  // twice the norm (outside the norm bound); row 3 points elsewhere; row 4 was never exposed.
  at::Tensor table = at::tensor({1.0f, 2.0f, 3.0f, 4.0f,    1.005f, 2.0f, 3.0f, 4.0f,  2.0f, 4.0f, 6.0f, 8.0f,
                                 -4.0f, 1.0f, 0.5f, 2.0f,   1.0f, 2.0f, 3.0f, 4.0f})
                         .view({5, 4});
  EmbeddingRows rows(5, 4);
  for (int64_t i = 0; i < 4; ++i) {
    rows.expose(i, 0);
    rows.count_lookups(i, 10 - i, 0);  // row 0 most looked up: the representative
  }
  RowProfile p = row_profile("item", table, rows);
  add_merge_candidates(p, table);
  EXPECT_EQ(p.merge_into, (std::vector<int64_t>{-1, 0, -1, -1, -1}));
  EXPECT_NEAR(p.merge_sq[1], 0.005 * 0.005, 1e-9);
  // 34 bytes: with row 4 pruned (its fallback row takes 16) the four exposed rows do not fit even
  // at INT2 (4 x 5 + 1 byte of codes = 21 > 18); one must go: merging row 1 costs 0.005^2,
  // pruning any row far more.
  const int64_t budget = 34, int4 = uniform_row_recipe(p, kRowInt4).bytes;
  RowRuleOptions merge;
  merge.merge = true;
  const RowRecipe m = make_row_recipe(p, budget, merge);
  EXPECT_EQ(m.method, "dynamics-merge");
  ASSERT_EQ(m.merged_into.size(), 5u);
  EXPECT_EQ(m.level[1], kRowMerged);
  EXPECT_EQ(m.merged_into[1], 0);
  EXPECT_EQ(m.level[4], kRowPruned);  // never exposed
  EXPECT_NE(m.level[0], kRowPruned);  // a representative stays
  // Stored: rows 0, 2, 3 at their levels (4 values: FP32 16 bytes, FP16 and INT8 8, INT4 2 bytes
  // of codes + 4 of scale, INT3 and INT2 1 + 4, pruned 0), codes of ceil(log2 k) bits for the k
  // levels present, one 3-bit index (1 byte), the fallback row (16 bytes).
  const int64_t by_level[kRowLevels] = {16, 8, 8, 6, 5, 5, 0, 0};
  int64_t kept = 0;
  std::set<uint8_t> present(m.level.begin(), m.level.end());
  for (int64_t i : {0, 2, 3}) kept += by_level[m.level[i]];
  EXPECT_EQ(m.bytes, kept + row_code_bytes(5, static_cast<int>(present.size())) + 1 + 16);
  EXPECT_EQ(row_bytes(4, m.level), m.bytes);
  EXPECT_LE(m.bytes, budget);
  at::Tensor applied = table.clone();
  EXPECT_EQ(apply_rows(applied, m), m.bytes);
  EXPECT_TRUE(applied[1].equal(applied[0]));  // row 1 served by row 0's stored values
  // Without merging the rule prunes an exposed row instead: further from the trained table.
  const RowRecipe prune = make_row_recipe(p, budget);
  EXPECT_TRUE(prune.merged_into.empty());
  at::Tensor pruned = table.clone();
  apply_rows(pruned, prune);
  const at::Tensor exposed = at::arange(4);
  EXPECT_LT((applied - table).index_select(0, exposed).pow(2).sum().item<double>(),
            (pruned - table).index_select(0, exposed).pow(2).sum().item<double>());
  // Bad candidates are refused by name.
  RowProfile bad = p;
  bad.merge_into[2] = 1;  // row 1 is itself merged
  EXPECT_THAT(error_of([&] { make_row_recipe(bad, int4, merge); }), HasSubstr("row 2: merge candidate 1"));
  RowRecipe lost = m;
  lost.merged_into.clear();
  EXPECT_THAT(error_of([&] { apply_rows(applied, lost); }), HasSubstr("names no row for each to share"));
  EXPECT_THAT(error_of([&] { add_merge_candidates(p, at::zeros({4, 4})); }), HasSubstr("differ in shape"));
}

}  // namespace
}  // namespace gradscope::compress
