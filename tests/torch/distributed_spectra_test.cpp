// The math behind exact effective ranks and CKA across ranks, in one process
// (src/torch/distributed/spectra.h): per-shard statistics combined equal the measure of the
// concatenated shards, to 1e-9 relative.
#include "distributed/spectra.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "audit/channel_math.h"

namespace gradscope::torch::internal {
namespace {

// Rows of `m` cut into shards of the given sizes.
std::vector<at::Tensor> shards_of(const at::Tensor& m, const std::vector<int64_t>& sizes) {
  std::vector<at::Tensor> out;
  int64_t at = 0;
  for (int64_t n : sizes) out.push_back(m.narrow(0, at, n)), at += n;
  EXPECT_EQ(at, m.size(0));
  return out;
}

double summed_gram_rank(const std::vector<at::Tensor>& shards) {
  at::Tensor gram = at::zeros({shards[0].size(1), shards[0].size(1)}, at::kDouble);
  for (const at::Tensor& s : shards) gram += s.t().mm(s);
  return effective_rank_of_gram(gram);
}

double combined_cka(const at::Tensor& x, const at::Tensor& y, const std::vector<int64_t>& sizes) {
  std::vector<CkaMoments> parts;
  const auto xs = shards_of(x, sizes), ys = shards_of(y, sizes);
  for (std::size_t i = 0; i < xs.size(); ++i) parts.push_back(cka_moments(xs[i], ys[i]));
  return linear_cka(combine(parts));
}

void expect_rel(double got, double want, const std::string& what) {
  EXPECT_NEAR(got, want, 1e-9 * std::abs(want)) << what;
}

TEST(SpectraMath, SummedGramsGiveTheEffectiveRankOfTheConcatenation) {
  at::manual_seed(11);
  const at::Tensor tall = at::randn({300, 16}, at::kDouble) + 3;                                  // N > C
  const at::Tensor deficient = at::randn({200, 4}, at::kDouble).mm(at::randn({4, 20}, at::kDouble));  // rank 4
  const at::Tensor wide = at::randn({12, 40}, at::kDouble);                                       // N < C
  const at::Tensor decay = at::randn({120, 10}, at::kDouble) * at::pow(0.5, at::arange(10.0, at::kDouble));
  for (const auto& [m, sizes] : std::vector<std::pair<at::Tensor, std::vector<int64_t>>>{
           {tall, {100, 150, 50}}, {deficient, {70, 0, 130}}, {wide, {5, 7}}, {wide, {1, 1, 10}}, {decay, {60, 60}}}) {
    const double want = effective_rank(m, 1);
    expect_rel(summed_gram_rank(shards_of(m, sizes)), want, "gram route " + std::to_string(m.size(0)));
    // The rows route: the concatenation of copied channel matrices is the matrix itself.
    std::vector<at::Tensor> copies;
    for (const at::Tensor& s : shards_of(m, sizes)) copies.push_back(channel_matrix(s, 1));
    EXPECT_EQ(effective_rank(at::cat(copies), 1), want);
  }
  EXPECT_NEAR(summed_gram_rank(shards_of(deficient, {100, 100})), 4.0, 1.0);
}

TEST(SpectraMath, EffectiveRankOfGramEdgeCases) {
  EXPECT_TRUE(std::isnan(effective_rank_of_gram(at::zeros({4, 4}, at::kDouble))));  // all zero
  EXPECT_TRUE(std::isnan(effective_rank_of_gram(at::empty({0, 0}, at::kDouble))));
  const at::Tensor constant = at::full({10, 4}, 2.0, at::kDouble);  // every sample the same: one direction
  EXPECT_NEAR(summed_gram_rank(shards_of(constant, {3, 7})), 1.0, 1e-12);
  EXPECT_NEAR(effective_rank(constant, 1), 1.0, 1e-12);
}

TEST(SpectraMath, CombinedMomentsGiveTheCkaOfTheConcatenation) {
  at::manual_seed(12);
  const at::Tensor x = at::randn({90, 6}, at::kDouble) * 0.1 + 1000;  // a mean far from the spread
  const at::Tensor y = at::tanh(x.mm(at::randn({6, 5}, at::kDouble))) + at::randn({90, 5}, at::kDouble) * 0.3;
  const at::Tensor xd = at::randn({60, 2}, at::kDouble).mm(at::randn({2, 8}, at::kDouble));  // rank 2
  const at::Tensor yd = xd.narrow(1, 0, 3) * 2 + at::randn({60, 3}, at::kDouble);
  const at::Tensor xw = at::randn({9, 30}, at::kDouble), yw = at::randn({9, 25}, at::kDouble) + xw.narrow(1, 0, 25);  // wide
  for (const auto& [a, b, sizes] : std::vector<std::tuple<at::Tensor, at::Tensor, std::vector<int64_t>>>{
           {x, y, {30, 30, 30}}, {x, y, {1, 0, 89}}, {xd, yd, {20, 40}}, {xw, yw, {4, 5}}, {xw, yw, {1, 1, 1, 6}}}) {
    const double want = linear_cka(a, b);
    ASSERT_TRUE(std::isfinite(want));
    expect_rel(combined_cka(a, b, sizes), want, "cka " + std::to_string(a.size(0)) + "x" + std::to_string(a.size(1)));
  }
  // One shard: its own moments.
  expect_rel(combined_cka(x, y, {90}), linear_cka(x, y), "one shard");
}

TEST(SpectraMath, CkaOfConstantNanAndEmptyInputsIsNaN) {
  const at::Tensor c = at::full({8, 3}, 2.0, at::kDouble);
  const at::Tensor y = at::randn({8, 2}, at::kDouble);
  EXPECT_TRUE(std::isnan(linear_cka(c, y)));
  EXPECT_TRUE(std::isnan(combined_cka(c, y, {3, 5})));  // constant on every shard, the same constant
  // Constant within each shard but not across them: not constant for the job.
  at::Tensor steps = at::cat({at::full({3, 3}, 1.0, at::kDouble), at::full({5, 3}, 4.0, at::kDouble)});
  expect_rel(combined_cka(steps, y, {3, 5}), linear_cka(steps, y), "constant per shard");
  at::Tensor bad = at::randn({8, 3}, at::kDouble);
  bad[2][1] = std::nan("");
  EXPECT_TRUE(std::isnan(linear_cka(bad, y)));
  EXPECT_TRUE(std::isnan(combined_cka(bad, y, {4, 4})));
  EXPECT_TRUE(std::isnan(linear_cka(combine({}))));  // no samples
  EXPECT_TRUE(std::isnan(linear_cka(combine({cka_moments(at::empty({0, 3}, at::kDouble), at::empty({0, 2}, at::kDouble))}))));
}

TEST(SpectraMath, MatricesAreCopiesInDouble) {
  at::Tensor x = at::arange(24.0, at::kDouble).reshape({2, 3, 4});
  const at::Tensor m = channel_matrix(x, 1);  // [2 * 4 samples, 3 channels]
  EXPECT_EQ(m.sizes(), (std::vector<int64_t>{8, 3}));
  EXPECT_EQ(m[1][2].item<double>(), x[0][2][1].item<double>());
  const at::Tensor s = sample_matrix(x.to(at::kFloat));
  EXPECT_EQ(s.sizes(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(s.scalar_type(), at::kDouble);
  x.mul_(0);  // an in-place op on the activation (ReLU(inplace)) after the tap changes no copy
  EXPECT_EQ(m[1][2].item<double>(), 9.0);
  EXPECT_EQ(channel_matrix(at::empty({5, 0, 2}), 1).sizes(), (std::vector<int64_t>{10, 0}));  // no channels
  EXPECT_EQ(channel_matrix(at::empty({0, 3}), 1).sizes(), (std::vector<int64_t>{0, 3}));       // no samples
  const at::Tensor d = sample_matrix(x);
  x.add_(1);
  EXPECT_EQ(d.sum().item<double>(), 0.0);
}

}  // namespace
}  // namespace gradscope::torch::internal
