// A non-owning view of tensor data: pointer, dtype, shape and strides (in elements).
//
//   std::vector<float> w(12);
//   auto v = gradscope::TensorView::contiguous(w.data(), gradscope::DType::kFloat32, {3, 4}, "w");
//   auto col = gradscope::TensorView::strided(w.data() + 1, gradscope::DType::kFloat32,
//                                             {3}, {4}, "w[:, 1]");
//
// The view never copies or frees; the data must outlive every use of the view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gradscope {

/// Element types the statistics kernels read.
enum class DType : uint8_t { kFloat32, kFloat64, kFloat16, kBFloat16 };

/// Lowercase name of a dtype ("float32", "float64", "float16", "bfloat16").
const char* dtype_name(DType dtype);

/// Bytes per element.
std::size_t dtype_size(DType dtype);

/// Parses a dtype name (also "float", "double", "half", "f32", ...); throws Error naming
/// `tensor` and the dtype when it is not one gradscope reads.
DType parse_dtype(std::string_view dtype, std::string_view tensor);

/// Non-owning, possibly strided view of a tensor's elements.
class TensorView {
 public:
  /// Row-major contiguous view. Throws Error for a null pointer with a non-zero size or a
  /// negative extent.
  static TensorView contiguous(const void* data, DType dtype, std::vector<int64_t> shape,
                               std::string name = {});

  /// View with explicit strides, counted in elements (any sign, zero allowed).
  static TensorView strided(const void* data, DType dtype, std::vector<int64_t> shape,
                            std::vector<int64_t> strides, std::string name = {});

  const void* data() const { return data_; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  const std::string& name() const { return name_; }
  int64_t numel() const { return numel_; }
  /// True when the elements are laid out row-major without gaps.
  bool is_contiguous() const { return contiguous_; }

 private:
  TensorView() = default;
  void validate();

  const void* data_ = nullptr;
  DType dtype_ = DType::kFloat32;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  std::string name_;
  int64_t numel_ = 0;
  bool contiguous_ = true;
};

}  // namespace gradscope
