// The measured maximum-loss search on a real module: the returned recipe, applied, loses at
// most the bound on the validation set and the next smaller probe loses more; the weights come
// back bit for bit; a bound of 0 loses nothing; bad bounds change and measure nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/utils.h>

#include <ATen/ATen.h>

#include <cmath>
#include <stdexcept>

#include "../common/compress_fixture.h"
#include "../common/error_of.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/torch/compress/apply_recipe.h"
#include "gradscope/torch/compress/search.h"

namespace gradscope::compress {
namespace {

namespace nn = ::torch::nn;
using ::testing::HasSubstr;
using test::error_of;

struct Fixture {
  nn::Sequential net;
  at::Tensor x, y;
  std::vector<NodeProfile> profiles;

  Fixture() {
    ::torch::manual_seed(7);
    net = nn::Sequential({{"fc1", nn::Linear(8, 24)}, {"relu", nn::ReLU()}, {"fc2", nn::Linear(24, 5)}});
    x = at::randn({400, 8});
    ::torch::NoGradGuard g;
    y = net->forward(x).argmax(1);  // the FP32 model is right on every validation row
    profiles = test::linear_chain(8, 24, 5);
    for (NodeProfile& p : profiles) {
      const at::Tensor w = *net->named_parameters().find(p.node + ".weight");
      p.batch = 16;
      p.grad_sq = 1e-3;
      p.param_elements = w.numel() + p.bias;
      p.steps = 1;
      for (int64_t j = 0; j < p.units(); ++j) {
        p.max_abs.push_back(w[j].abs().max().item<double>());
        p.weight_sq.push_back(w[j].pow(2).sum().item<double>());
        p.act_sq.push_back(1e-2 * static_cast<double>(j + 1));  // later units more salient
        p.out_grad_sq.push_back(1e-4);
        p.zero_frac.push_back(0.0);
      }
    }
  }
  double accuracy() {
    ::torch::NoGradGuard g;
    return net->forward(x).argmax(1).eq(y).to(at::kDouble).mean().item<double>();
  }
  double loss_of(const Recipe& r) {
    std::vector<at::Tensor> saved;
    for (const at::Tensor& p : net->parameters()) saved.push_back(p.detach().clone());
    compress::apply(*net.ptr(), r);
    const double lost = 1.0 - accuracy();
    ::torch::NoGradGuard g;
    std::size_t i = 0;
    for (at::Tensor& p : net->parameters()) p.copy_(saved[i++]);
    return lost;
  }
  bool weights_equal(const std::vector<at::Tensor>& before) {
    std::size_t i = 0;
    for (const at::Tensor& p : net->parameters())
      if (!p.equal(before[i++])) return false;
    return true;
  }
  std::vector<at::Tensor> snapshot() {
    std::vector<at::Tensor> s;
    for (const at::Tensor& p : net->parameters()) s.push_back(p.detach().clone());
    return s;
  }
};

TEST(CompressSearchTorch, ReturnedRecipeIsWithinTheBoundAndTheNextSmallerProbeIsNot) {
  Fixture f;
  const auto before = f.snapshot();
  const MeasuredSearch s = search_max_loss(*f.net.ptr(), f.profiles, 0.05, [&] { return f.accuracy(); });
  EXPECT_TRUE(f.weights_equal(before));
  // Measured again, independently of the search: within the bound.
  EXPECT_LE(f.loss_of(s.recipe), 0.05);
  EXPECT_NEAR(f.loss_of(s.recipe), s.loss, 1e-12);
  ASSERT_FALSE(s.reached_smallest);  // one unit of 24 with INT4 loses far more than 5%
  EXPECT_GT(s.next_smaller.loss, 0.05);
  EXPECT_LT(s.next_smaller.bytes, s.recipe.bytes);
  EXPECT_GT(f.loss_of(make_recipe(f.profiles, Budget::bytes(s.next_smaller.budget_bytes))), 0.05);
  EXPECT_LT(s.recipe.bytes, s.recipe.fp32_bytes);
}

TEST(CompressSearchTorch, BoundZeroLosesNothingOnTheValidationSet) {
  Fixture f;
  const MeasuredSearch s = search_max_loss(*f.net.ptr(), f.profiles, 0.0, [&] { return f.accuracy(); });
  EXPECT_EQ(s.loss, 0.0);
  EXPECT_EQ(f.loss_of(s.recipe), 0.0);
  EXPECT_LE(s.recipe.bytes, s.recipe.fp32_bytes);
}

TEST(CompressSearchTorch, ALossMetricCountsUpward) {
  Fixture f;
  const auto xent = [&] {
    ::torch::NoGradGuard g;
    return at::cross_entropy_loss(f.net->forward(f.x), f.y).item<double>();
  };
  const MeasuredSearch s = search_max_loss(*f.net.ptr(), f.profiles, 0.02, xent, Metric::kLoss);
  const double ref = xent();
  compress::apply(*f.net.ptr(), s.recipe);
  EXPECT_LE(xent() - ref, 0.02);
  EXPECT_NEAR(xent() - ref, s.loss, 1e-9);
}

TEST(CompressSearchTorch, BadBoundsAndThrowingEvaluationsLeaveTheModelAlone) {
  Fixture f;
  const auto before = f.snapshot();
  int calls = 0;
  const auto counted = [&] {
    ++calls;
    return f.accuracy();
  };
  EXPECT_THAT(error_of([&] { search_max_loss(*f.net.ptr(), f.profiles, -1.0, counted); }), HasSubstr("finite number >= 0"));
  EXPECT_THAT(error_of([&] { search_max_loss(*f.net.ptr(), f.profiles, std::nan(""), counted); }), HasSubstr("finite"));
  EXPECT_EQ(calls, 0);
  int n = 0;
  EXPECT_THROW(search_max_loss(*f.net.ptr(), f.profiles, 0.01,
                               [&] {
                                 if (++n == 2) throw std::runtime_error("validation data went away");
                                 return f.accuracy();
                               }),
               std::runtime_error);
  EXPECT_TRUE(f.weights_equal(before));  // restored though the probe threw mid-way
  EXPECT_THAT(error_of([&] { search_max_loss(*f.net.ptr(), f.profiles, 0.01, [] { return std::nan(""); }); }),
              HasSubstr("model as given is nan"));
}

}  // namespace
}  // namespace gradscope::compress
