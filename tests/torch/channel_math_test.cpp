// effective_rank from the Gram matrix's eigenvalues against the definition (linalg_svdvals).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>

#include "audit/channel_math.h"  // src/torch, internal

namespace {

using gradscope::torch::internal::effective_rank;

// exp(entropy of the normalised singular values), straight from the SVD.
double rank_by_svd(const at::Tensor& samples_by_channels) {
  const at::Tensor s = at::linalg_svdvals(samples_by_channels.to(at::kDouble));
  const at::Tensor p = s / s.sum();
  const at::Tensor nz = p.masked_select(p > 0);
  return std::exp(-(nz * nz.log()).sum().item<double>());
}

TEST(EffectiveRank, EqualsTheSvdsOnWideTallLowRankAndDecayingSpectra) {
  at::manual_seed(3);
  const at::Tensor wide = at::tanh(at::randn({256, 1024}));                     // samples < channels
  const at::Tensor tall = at::randn({2048, 64});                                // samples > channels
  const at::Tensor low = at::randn({256, 5}).mm(at::randn({5, 512}));           // rank 5
  const at::Tensor decay = at::randn({300, 40}) * at::pow(0.5, at::arange(40.0));  // 1 .. 2^-39
  for (const at::Tensor& m : {wide, tall, low, decay}) {
    const double want = rank_by_svd(m);
    EXPECT_NEAR(effective_rank(m, 1), want, 1e-5 * want) << m.sizes();
  }
  EXPECT_NEAR(effective_rank(low, 1), 5.0, 1.0);  // a rank-5 product spreads over 5 directions
}

TEST(EffectiveRank, ChannelsAlongAnyDimension) {
  at::manual_seed(4);
  const at::Tensor nchw = at::randn({8, 6, 5, 5});  // 200 samples of 6 channels
  const double want = rank_by_svd(nchw.movedim(1, -1).reshape({-1, 6}));
  EXPECT_NEAR(effective_rank(nchw, 1), want, 1e-9 * want);
}

TEST(EffectiveRank, OneDirectionIsOneAndNothingIsNaN) {
  const at::Tensor line = at::arange(1.0, 11.0).unsqueeze(1).mm(at::ones({1, 4}));  // 10 samples on a line
  EXPECT_NEAR(effective_rank(line, 1), 1.0, 1e-6);
  EXPECT_TRUE(std::isnan(effective_rank(at::zeros({10, 4}), 1)));
  EXPECT_TRUE(std::isnan(effective_rank(at::empty({0, 4}), 1)));
  at::Tensor bad = at::randn({10, 4});
  bad[3][2] = std::nan("");
  EXPECT_TRUE(std::isnan(effective_rank(bad, 1)));
}

}  // namespace
