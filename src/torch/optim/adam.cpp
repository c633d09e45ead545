#include "gradscope/torch/optim/adam.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <c10/util/string_utils.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <tuple>

namespace gradscope::torch {

void InstrumentedOptimizer::measure_next_step(const StatsOptions& options) {
  measure_ = true;
  options_ = options;
}

const FusedStats* InstrumentedOptimizer::measured(const at::Tensor& param) const {
  const auto it = measured_.find(param.unsafeGetTensorImpl());
  return it == measured_.end() ? nullptr : &it->second;
}

const StatsOptions* InstrumentedOptimizer::begin_step() {
  measured_.clear();
  const bool measure = measure_;
  measure_ = false;
  return measure ? &options_ : nullptr;
}

void InstrumentedOptimizer::record(const at::Tensor& param, const FusedStats& stats) {
  measured_[param.unsafeGetTensorImpl()] = stats;
}

Adam::Adam(std::vector<::torch::optim::OptimizerParamGroup> param_groups, ::torch::optim::AdamOptions defaults)
    : ::torch::optim::Adam(std::move(param_groups), defaults) {}

Adam::Adam(std::vector<at::Tensor> params, ::torch::optim::AdamOptions defaults)
    : ::torch::optim::Adam(std::move(params), defaults) {}

namespace {

bool plain_float(const at::Tensor& t) {
  return t.defined() && t.device().is_cpu() && t.scalar_type() == at::kFloat && t.layout() == at::kStrided &&
         t.is_contiguous();
}

// Chunks of kChunk elements run on LibTorch's intra-op threads, as its own Adam's element-wise
// operations do, each measuring its own; merged in chunk order, so the statistics do not depend
// on the number of threads.
constexpr int64_t kChunk = int64_t{1} << 16;

void fused_update(at::Tensor& p, const at::Tensor& grad, at::Tensor& m, at::Tensor& v, const AdamCoefficients& c,
                  const StatsOptions* measure, FusedStats* out) {
  float *pp = p.data_ptr<float>(), *mp = m.data_ptr<float>(), *vp = v.data_ptr<float>();
  const float* gp = grad.data_ptr<float>();
  const int64_t n = p.numel(), chunks = (n + kChunk - 1) / kChunk;
  std::vector<FusedStats> parts(measure ? static_cast<std::size_t>(chunks) : 0);
  at::parallel_for(0, chunks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t at = k * kChunk, len = std::min(kChunk, n - at);
      adam_pass(pp + at, gp + at, mp + at, vp + at, len, c, measure ? *measure : StatsOptions{},
                measure ? &parts[static_cast<std::size_t>(k)] : nullptr);
    }
  });
  if (!measure) return;
  FusedStats s;
  for (const FusedStats& part : parts) {
    s.value = merge(s.value, part.value);
    s.grad = merge(s.grad, part.grad);
    s.update = merge(s.update, part.update);
  }
  *out = s;
}

const ::torch::optim::AdamOptions& options_of(const ::torch::optim::OptimizerParamGroup& group) {
  return static_cast<const ::torch::optim::AdamOptions&>(group.options());
}

}  // namespace

bool Adam::fuses(const at::Tensor& param) const {
  if (!plain_float(param) || !plain_float(param.grad())) return false;
  for (const auto& group : param_groups())
    for (const at::Tensor& p : group.params())
      if (p.unsafeGetTensorImpl() == param.unsafeGetTensorImpl()) return !options_of(group).amsgrad();
  return false;
}

// LibTorch 1.13's Adam::step, with the fused pass for the parameters it can take.
at::Tensor Adam::step(LossClosure closure) {
  const StatsOptions* measure = begin_step();
  ::torch::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& o = options_of(group);
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      at::Tensor grad = p.grad();
      TORCH_CHECK(!grad.is_sparse(), "Adam does not support sparse gradients");
      const std::string key = c10::guts::to_string(p.unsafeGetTensorImpl());
      auto found = state().find(key);
      if (found == state().end()) {
        auto s = std::make_unique<::torch::optim::AdamParamState>();
        s->step(0);
        s->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        s->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        if (o.amsgrad()) s->max_exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        state()[key] = std::move(s);
      }
      auto& s = static_cast<::torch::optim::AdamParamState&>(*state()[key]);
      s.step(s.step() + 1);
      at::Tensor& m = s.exp_avg();
      at::Tensor& v = s.exp_avg_sq();
      if (!o.amsgrad() && plain_float(p) && plain_float(grad) && plain_float(m) && plain_float(v)) {
        const AdamCoefficients c = adam_coefficients(o.lr(), beta1, beta2, o.eps(), o.weight_decay(), s.step());
        FusedStats stats;
        fused_update(p, grad, m, v, c, measure, &stats);
        if (measure) record(p, stats);
        continue;
      }
      const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(s.step()));
      const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(s.step()));
      if (o.weight_decay() != 0) grad = grad.add(p, o.weight_decay());
      m.mul_(beta1).add_(grad, 1 - beta1);
      v.mul_(beta2).addcmul_(grad, grad, 1 - beta2);
      at::Tensor denom;
      if (o.amsgrad()) {
        at::Tensor& max_v = s.max_exp_avg_sq();
        at::max_out(max_v, v, max_v);
        denom = (max_v.sqrt() / std::sqrt(bias_correction2)).add_(o.eps());
      } else {
        denom = (v.sqrt() / std::sqrt(bias_correction2)).add_(o.eps());
      }
      p.addcdiv_(m, denom, -o.lr() / bias_correction1);
    }
  }
  return loss;
}

}  // namespace gradscope::torch
