// LibTorch tensors through the adapter agree with LibTorch's own reductions.
#include "gradscope/torch/tensor.h"

#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../common/error_of.h"
#include "gradscope/core/error.h"

namespace gradscope::torch {
namespace {

using ::testing::HasSubstr;

using test::error_of;

void expect_like_torch(const at::Tensor& t) {
  const Stats s = stats_of(t, "t");
  const at::Tensor d = t.to(at::kDouble);  // LibTorch's reference, in double
  EXPECT_EQ(s.count, t.numel());
  EXPECT_EQ(s.finite, d.isfinite().sum().item<int64_t>());
  EXPECT_EQ(s.nan, d.isnan().sum().item<int64_t>());
  EXPECT_EQ(s.zero, d.abs().le(1e-7).sum().item<int64_t>());
  const at::Tensor fin = d.masked_select(d.isfinite());
  EXPECT_NEAR(s.l2(), fin.norm().item<double>(), 1e-9 * fin.norm().item<double>());
  EXPECT_NEAR(s.mean_abs(), fin.abs().mean().item<double>(), 1e-9);
  EXPECT_NEAR(s.stddev(), fin.std(/*unbiased=*/false).item<double>(), 1e-6);
  EXPECT_EQ(s.min, fin.min().item<double>());
  EXPECT_EQ(s.max, fin.max().item<double>());
}

TEST(TorchTensor, EveryDtypeMatchesTorch) {
  at::manual_seed(3);
  for (auto type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16}) {
    SCOPED_TRACE(c10::toString(type));
    at::Tensor t = at::randn({37, 29}).to(type);
    t[0][0] = NAN;
    t[1][2] = 0;
    expect_like_torch(t);
  }
}

TEST(TorchTensor, NonContiguousViewsNeedNoCopy) {
  at::manual_seed(4);
  const at::Tensor base = at::randn({64, 48});
  const at::Tensor transposed = base.t();
  ASSERT_FALSE(transposed.is_contiguous());
  expect_like_torch(transposed);
  expect_like_torch(base.slice(1, 0, 48, 3));
  const TensorView v = view_of(transposed, "t");
  EXPECT_EQ(v.data(), base.data_ptr());
  EXPECT_FALSE(v.is_contiguous());
}

TEST(TorchTensor, EmptyTensorHasNoData) {
  const Stats s = stats_of(at::empty({0, 8}), "e");
  EXPECT_EQ(s.count, 0);
}

TEST(TorchTensor, BadTensorsAreErrorsNamingTheTensor) {
  EXPECT_THAT(error_of([] { view_of(at::ones({3}, at::kLong), "fc1.weight"); }),
              HasSubstr("tensor 'fc1.weight': unsupported dtype Long"));
  EXPECT_THAT(error_of([] { view_of(at::Tensor(), "fc1.weight.grad"); }),
              HasSubstr("tensor 'fc1.weight.grad': undefined tensor"));
  EXPECT_THAT(error_of([] { view_of(at::eye(3).to_sparse(), "emb.grad"); }),
              HasSubstr("tensor 'emb.grad': layout Sparse is not supported"));
}

TEST(TorchTensor, ShapesAreWrittenAsErrorMessagesWriteThem) {
  EXPECT_EQ(shape_of(at::empty({50, 8})), "[50, 8]");
  EXPECT_EQ(shape_of(at::empty({0})), "[0]");
  EXPECT_EQ(shape_of(at::ones({})), "[]");
  EXPECT_EQ(shape_of(at::Tensor()), "undefined");
}

}  // namespace
}  // namespace gradscope::torch
