#include "gradscope/torch/optim/adam.h"

#include <ATen/Functions.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>
#include <tuple>

#include "optim/fused.h"

namespace gradscope::torch {
namespace {

using optim_internal::plain_float;

// LibTorch 1.13's Adam::step and AdamW::step (they differ only in the weight decay), with the
// fused pass for the parameters it can take. `decoupled`: AdamW.
template <class Options, class ParamState, class Base>
at::Tensor adam_family_step(Base& self, const StatsOptions* measure, bool decoupled,
                            const std::function<void(const at::Tensor&, const FusedStats&)>& record,
                            const ::torch::optim::Optimizer::LossClosure& closure) {
  ::torch::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (::torch::optim::OptimizerParamGroup& group : self.param_groups()) {
    const auto& o = static_cast<const Options&>(group.options());
    const double beta1 = std::get<0>(o.betas()), beta2 = std::get<1>(o.betas());
    for (at::Tensor& p : group.params()) {
      if (!p.grad().defined()) continue;
      at::Tensor grad = p.grad();
      TORCH_CHECK(!grad.is_sparse(), decoupled ? "AdamW" : "Adam", " does not support sparse gradients");
      void* const key = optim_internal::state_key(p);
      if (self.state().find(key) == self.state().end()) {
        auto s = std::make_unique<ParamState>();
        s->step(0);
        s->exp_avg(at::zeros_like(p, at::MemoryFormat::Preserve));
        s->exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        if (o.amsgrad()) s->max_exp_avg_sq(at::zeros_like(p, at::MemoryFormat::Preserve));
        self.state()[key] = std::move(s);
      }
      auto& s = static_cast<ParamState&>(*self.state()[key]);
      s.step(s.step() + 1);
      at::Tensor& m = s.exp_avg();
      at::Tensor& v = s.exp_avg_sq();
      if (!o.amsgrad() && plain_float(p) && plain_float(grad) && plain_float(m) && plain_float(v)) {
        const AdamCoefficients c =
            adam_coefficients(o.lr(), beta1, beta2, o.eps(), o.weight_decay(), s.step(), decoupled);
        float *pp = p.data_ptr<float>(), *mp = m.data_ptr<float>(), *vp = v.data_ptr<float>();
        const float* gp = grad.data_ptr<float>();
        FusedStats stats;
        optim_internal::run_chunked(p.numel(), measure != nullptr, &stats,
                                    [&](int64_t at, int64_t n, FusedStats* part) {
                                      adam_pass(pp + at, gp + at, mp + at, vp + at, n, c,
                                                measure ? *measure : StatsOptions{}, part);
                                    });
        if (measure) record(p, stats);
        continue;
      }
      const double bias_correction1 = 1 - std::pow(beta1, static_cast<double>(s.step()));
      const double bias_correction2 = 1 - std::pow(beta2, static_cast<double>(s.step()));
      if (decoupled) {
        if (o.weight_decay() != 0) p.mul_(1 - o.lr() * o.weight_decay());
      } else if (o.weight_decay() != 0) {
        grad = grad.add(p, o.weight_decay());
      }
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

// What step() will decide for `param`: a moment loaded in another layout takes ATen's path.
template <class Options, class ParamState, class Base>
bool adam_family_fuses(const Base& self, const ::torch::optim::OptimizerParamGroup* group, const at::Tensor& param) {
  if (!plain_float(param) || !plain_float(param.grad())) return false;
  if (!group || static_cast<const Options&>(group->options()).amsgrad()) return false;
  const auto found = self.state().find(optim_internal::state_key(param));
  if (found == self.state().end()) return true;  // its moments will be made contiguous
  const auto& s = static_cast<const ParamState&>(*found->second);
  return plain_float(s.exp_avg()) && plain_float(s.exp_avg_sq());
}

}  // namespace

Adam::Adam(std::vector<::torch::optim::OptimizerParamGroup> param_groups, ::torch::optim::AdamOptions defaults)
    : ::torch::optim::Adam(std::move(param_groups), defaults) {}

Adam::Adam(std::vector<at::Tensor> params, ::torch::optim::AdamOptions defaults)
    : ::torch::optim::Adam(std::move(params), defaults) {}

bool Adam::fuses(const at::Tensor& param) const {
  return adam_family_fuses<::torch::optim::AdamOptions, ::torch::optim::AdamParamState>(
      *this, group_of(*this, param), param);
}

at::Tensor Adam::step(LossClosure closure) {
  const StatsOptions* measure = begin_step();
  return adam_family_step<::torch::optim::AdamOptions, ::torch::optim::AdamParamState>(
      *this, measure, false, [&](const at::Tensor& p, const FusedStats& s) { record(p, s); }, closure);
}

AdamW::AdamW(std::vector<::torch::optim::OptimizerParamGroup> param_groups, ::torch::optim::AdamWOptions defaults)
    : ::torch::optim::AdamW(std::move(param_groups), defaults) {}

AdamW::AdamW(std::vector<at::Tensor> params, ::torch::optim::AdamWOptions defaults)
    : ::torch::optim::AdamW(std::move(params), defaults) {}

bool AdamW::fuses(const at::Tensor& param) const {
  return adam_family_fuses<::torch::optim::AdamWOptions, ::torch::optim::AdamWParamState>(
      *this, group_of(*this, param), param);
}

at::Tensor AdamW::step(LossClosure closure) {
  const StatsOptions* measure = begin_step();
  return adam_family_step<::torch::optim::AdamWOptions, ::torch::optim::AdamWParamState>(
      *this, measure, true, [&](const at::Tensor& p, const FusedStats& s) { record(p, s); }, closure);
}

}  // namespace gradscope::torch
