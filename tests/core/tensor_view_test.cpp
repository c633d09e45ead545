#include "gradscope/core/stats/tensor_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "../common/error_of.h"
#include "gradscope/core/error.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;

using test::error_of;

TEST(TensorView, ContiguousStridesAreRowMajor) {
  float data[24] = {};
  auto v = TensorView::contiguous(data, DType::kFloat32, {2, 3, 4}, "x");
  EXPECT_EQ(v.strides(), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(v.numel(), 24);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.name(), "x");
}

TEST(TensorView, TransposeAndSlicesAreNotContiguous) {
  float data[12] = {};
  EXPECT_FALSE(TensorView::strided(data, DType::kFloat32, {4, 3}, {1, 4}).is_contiguous());
  EXPECT_FALSE(TensorView::strided(data, DType::kFloat32, {6}, {2}).is_contiguous());
  // Extents of one may carry any stride and stay contiguous.
  EXPECT_TRUE(TensorView::strided(data, DType::kFloat32, {1, 12}, {99, 1}).is_contiguous());
}

TEST(TensorView, ScalarHasOneElement) {
  double x = 3;
  EXPECT_EQ(TensorView::contiguous(&x, DType::kFloat64, {}).numel(), 1);
}

TEST(TensorView, NullPointerWithElementsIsAnError) {
  EXPECT_THAT(error_of([] { TensorView::contiguous(nullptr, DType::kFloat32, {3}, "fc1.weight"); }),
              HasSubstr("tensor 'fc1.weight': null data pointer with 3 elements"));
}

TEST(TensorView, NullPointerWithoutElementsIsEmpty) {
  auto v = TensorView::contiguous(nullptr, DType::kFloat16, {0, 5});
  EXPECT_EQ(v.numel(), 0);
}

TEST(TensorView, BadShapesAreErrors) {
  float x[4] = {};
  EXPECT_THAT(error_of([&] { TensorView::contiguous(x, DType::kFloat32, {2, -2}, "w"); }),
              HasSubstr("tensor 'w': negative extent -2"));
  EXPECT_THAT(error_of([&] { TensorView::strided(x, DType::kFloat32, {2, 2}, {1}, "w"); }),
              HasSubstr("shape has 2 dims but strides have 1"));
  EXPECT_THAT(error_of([&] { TensorView::contiguous(x, static_cast<DType>(9), {4}, "w"); }),
              HasSubstr("invalid dtype code 9"));
}

TEST(DType, NamesAndSizes) {
  EXPECT_STREQ(dtype_name(DType::kBFloat16), "bfloat16");
  EXPECT_EQ(dtype_size(DType::kFloat16), 2u);
  EXPECT_EQ(dtype_size(DType::kFloat64), 8u);
  EXPECT_EQ(parse_dtype("Half", "t"), DType::kFloat16);
  EXPECT_EQ(parse_dtype("bf16", "t"), DType::kBFloat16);
  EXPECT_EQ(parse_dtype("double", "t"), DType::kFloat64);
}

TEST(DType, UnsupportedDtypeNamesTensorAndDtype) {
  EXPECT_THAT(error_of([] { parse_dtype("int64", "fc1.weight"); }),
              HasSubstr("tensor 'fc1.weight': unsupported dtype int64"));
}

}  // namespace
}  // namespace gradscope
