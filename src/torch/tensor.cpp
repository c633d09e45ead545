#include "gradscope/torch/tensor.h"

#include <sstream>

#include "aten_stats.h"
#include "gradscope/core/error.h"

namespace gradscope::torch {

DType dtype_of(c10::ScalarType type, const std::string& name) {
  switch (type) {
    case c10::ScalarType::Float: return DType::kFloat32;
    case c10::ScalarType::Double: return DType::kFloat64;
    case c10::ScalarType::Half: return DType::kFloat16;
    case c10::ScalarType::BFloat16: return DType::kBFloat16;
    default: break;
  }
  return parse_dtype(c10::toString(type), name);  // throws, naming tensor and dtype
}

namespace internal {

void check_dense_float(const at::Tensor& tensor, const std::string& name) {
  // The message prefix is built only on the error paths: tensors are checked on every audited step.
  auto who = [&] { return "tensor '" + name + "': "; };
  if (!tensor.defined()) throw Error(who() + "undefined tensor");
  if (tensor.layout() != c10::kStrided)
  {
    std::ostringstream layout;
    layout << tensor.layout();
    throw Error(who() + "layout " + layout.str() +
                " is not supported (dense tensors only; use .to_dense() or the values)");
  }
  if (tensor.is_meta()) throw Error(who() + "on device meta, which holds no data to measure");
  dtype_of(tensor.scalar_type(), name);  // throws, naming tensor and dtype
}

}  // namespace internal

TensorView view_of(const at::Tensor& tensor, const std::string& name) {
  internal::check_dense_float(tensor, name);
  // A view is a CPU pointer; tensors elsewhere are reduced on their device by stats_of.
  if (!tensor.device().is_cpu())
    throw Error("tensor '" + name + "': on device " + tensor.device().str() +
                "; a view reads CPU memory only (stats_of reduces it on its device)");
  return TensorView::strided(tensor.data_ptr(), dtype_of(tensor.scalar_type(), name), tensor.sizes().vec(),
                             tensor.strides().vec(), name);
}

std::string shape_of(const at::Tensor& tensor) {
  if (!tensor.defined()) return "undefined";  // LibTorch would say [0]
  return shape_of(tensor.sizes());
}

std::string shape_of(c10::IntArrayRef sizes) {
  std::string out = "[";
  for (std::size_t d = 0; d < sizes.size(); ++d) out += (d ? ", " : "") + std::to_string(sizes[d]);
  return out + "]";
}

Stats stats_of(const at::Tensor& tensor, const std::string& name, const StatsOptions& options) {
  // Not on the CPU (or forced): ATen reductions where the tensor lives, one small copy back.
  if (internal::use_aten_stats(tensor)) return internal::aten_stats(tensor, name, options);
  return compute(view_of(tensor, name), options);
}

}  // namespace gradscope::torch
