#include "gradscope/torch/optim/tensor_passes.h"

#include "gradscope/core/optim/sgd_pass.h"
#include "optim/fused.h"

namespace gradscope::torch {

using optim_internal::plain_float;

void TensorPasses::take(const at::Tensor& param) { taken_.insert(param.unsafeGetTensorImpl()); }

void TensorPasses::drop(const at::Tensor& param) { taken_.erase(param.unsafeGetTensorImpl()); }

bool TensorPasses::fuses(const at::Tensor& param) const {
  return taken_.count(param.unsafeGetTensorImpl()) && plain_float(param) && plain_float(param.grad());
}

void TensorPasses::begin() { measure_ = begin_step(); }

namespace {
bool same_plain(const at::Tensor& t, const at::Tensor& param) { return plain_float(t) && t.numel() == param.numel(); }
}  // namespace

bool TensorPasses::adam(at::Tensor& param, const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq, double lr,
                        double beta1, double beta2, double eps, double weight_decay, int64_t step, bool decoupled) {
  if (!fuses(param) || !same_plain(exp_avg, param) || !same_plain(exp_avg_sq, param)) return false;
  const AdamCoefficients c = adam_coefficients(lr, beta1, beta2, eps, weight_decay, step, decoupled);
  float *p = param.data_ptr<float>(), *m = exp_avg.data_ptr<float>(), *v = exp_avg_sq.data_ptr<float>();
  const at::Tensor grad = param.grad();
  const float* g = grad.data_ptr<float>();
  FusedStats stats;
  optim_internal::run_chunked(param.numel(), measure_ != nullptr, &stats, [&](int64_t at, int64_t n, FusedStats* part) {
    adam_pass(p + at, g + at, m + at, v + at, n, c, measure_ ? *measure_ : StatsOptions{}, part);
  });
  if (measure_) record(param, stats);
  return true;
}

bool TensorPasses::sgd(at::Tensor& param, const at::Tensor& buffer, double lr, double momentum, double dampening,
                       double weight_decay, bool nesterov, bool first) {
  if (!fuses(param) || (momentum != 0 && !same_plain(buffer, param))) return false;
  const SgdCoefficients c = sgd_coefficients(lr, momentum, dampening, weight_decay, nesterov, first);
  float* p = param.data_ptr<float>();
  float* b = momentum != 0 ? buffer.data_ptr<float>() : nullptr;
  const at::Tensor grad = param.grad();
  const float* g = grad.data_ptr<float>();
  FusedStats stats;
  optim_internal::run_chunked(param.numel(), measure_ != nullptr, &stats, [&](int64_t at, int64_t n, FusedStats* part) {
    sgd_pass(p + at, g + at, b ? b + at : nullptr, n, c, measure_ ? *measure_ : StatsOptions{}, part);
  });
  if (measure_) record(param, stats);
  return true;
}

}  // namespace gradscope::torch
