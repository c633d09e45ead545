#include "gradscope/core/stats/tensor_view.h"

#include <algorithm>
#include <cctype>

#include "gradscope/core/error.h"

namespace gradscope {

const char* dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
  }
  return "invalid";
}

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::kFloat32: return 4;
    case DType::kFloat64: return 8;
    case DType::kFloat16: return 2;
    case DType::kBFloat16: return 2;
  }
  throw Error("invalid dtype code " + std::to_string(static_cast<int>(dtype)));
}

DType parse_dtype(std::string_view dtype, std::string_view tensor) {
  std::string s(dtype);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "float32" || s == "float" || s == "f32") return DType::kFloat32;
  if (s == "float64" || s == "double" || s == "f64") return DType::kFloat64;
  if (s == "float16" || s == "half" || s == "f16") return DType::kFloat16;
  if (s == "bfloat16" || s == "bf16") return DType::kBFloat16;
  throw Error("tensor '" + std::string(tensor) + "': unsupported dtype " + std::string(dtype) +
              " (gradscope reads float32, float64, float16, bfloat16)");
}

TensorView TensorView::contiguous(const void* data, DType dtype, std::vector<int64_t> shape,
                                  std::string name) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (std::size_t i = shape.size(); i-- > 1;) strides[i - 1] = strides[i] * std::max<int64_t>(shape[i], 1);
  return strided(data, dtype, std::move(shape), std::move(strides), std::move(name));
}

TensorView TensorView::strided(const void* data, DType dtype, std::vector<int64_t> shape,
                               std::vector<int64_t> strides, std::string name) {
  TensorView v;
  v.data_ = data;
  v.dtype_ = dtype;
  v.shape_ = std::move(shape);
  v.strides_ = std::move(strides);
  v.name_ = std::move(name);
  v.validate();
  return v;
}

void TensorView::validate() {
  // Built on the error paths only: a view is validated on every pass.
  auto who = [&] { return "tensor '" + name_ + "': "; };
  dtype_size(dtype_);  // throws for a dtype code outside the enum
  if (shape_.size() != strides_.size())
    throw Error(who() + "shape has " + std::to_string(shape_.size()) + " dims but strides have " +
                std::to_string(strides_.size()));
  numel_ = 1;
  for (int64_t extent : shape_) {
    if (extent < 0) throw Error(who() + "negative extent " + std::to_string(extent));
    numel_ *= extent;
  }
  if (numel_ > 0 && data_ == nullptr)
    throw Error(who() + "null data pointer with " + std::to_string(numel_) + " elements");
  // Contiguous means row-major without gaps; extents of 1 may carry any stride.
  contiguous_ = true;
  int64_t expected = 1;
  for (std::size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != expected) contiguous_ = false;
    expected *= shape_[i];
  }
}

}  // namespace gradscope
