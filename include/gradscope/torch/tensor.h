// LibTorch tensors as gradscope views: no copy, any strides, float32/64/16/bf16. CPU tensors
// are read in place by the fused kernel; tensors on another device are reduced there with
// ATen ops and only the small result is copied back (docs/devices.md).
//
//   at::Tensor g = model->fc1->weight.grad();
//   gradscope::Stats s = gradscope::torch::stats_of(g, "fc1.weight");
//   double norm = s.l2();
//
// The adapter keeps LibTorch out of gradscope::core: only this library includes it.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "gradscope/core/stats/stats.h"

namespace gradscope::torch {

/// Maps a LibTorch dtype; throws Error naming `name` and the dtype when unsupported.
DType dtype_of(c10::ScalarType type, const std::string& name);

/// A view of a defined, dense (strided) CPU tensor. The tensor must outlive the view.
/// Throws Error naming `name` for an undefined, sparse, non-CPU or non-float tensor (stats_of
/// reads tensors on any device).
TensorView view_of(const at::Tensor& tensor, const std::string& name);

/// The shape as error messages write it: "[50, 8]"; "[]" for a scalar, "undefined".
std::string shape_of(const at::Tensor& tensor);
/// "[2, 3]" for these sizes.
std::string shape_of(c10::IntArrayRef sizes);

/// One fused pass over a CPU tensor (see gradscope::compute); on any other device, ATen
/// reductions there and one small copy of their result. Throws Error naming `name` for an
/// undefined, sparse, meta or non-float tensor.
Stats stats_of(const at::Tensor& tensor, const std::string& name, const StatsOptions& options = {});

}  // namespace gradscope::torch
