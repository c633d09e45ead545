#include "gradscope/torch/optim/sgd.h"

#include <ATen/Functions.h>
#include <torch/csrc/autograd/grad_mode.h>

#include "gradscope/core/optim/sgd_pass.h"
#include "optim/fused.h"

namespace gradscope::torch {

using optim_internal::plain_float;

SGD::SGD(std::vector<::torch::optim::OptimizerParamGroup> param_groups, ::torch::optim::SGDOptions defaults)
    : ::torch::optim::SGD(std::move(param_groups), defaults) {}

SGD::SGD(std::vector<at::Tensor> params, ::torch::optim::SGDOptions defaults)
    : ::torch::optim::SGD(std::move(params), defaults) {}

bool SGD::fuses(const at::Tensor& param) const {
  const ::torch::optim::OptimizerParamGroup* group = group_of(*this, param);
  if (!plain_float(param) || !plain_float(param.grad()) || !group) return false;
  // What step() will decide: a momentum buffer loaded in another layout takes ATen's path.
  const auto found = state().find(optim_internal::state_key(param));
  if (found == state().end()) return true;
  const auto& buffer = static_cast<const ::torch::optim::SGDParamState&>(*found->second).momentum_buffer();
  const auto& o = static_cast<const ::torch::optim::SGDOptions&>(group->options());
  return o.momentum() == 0 || plain_float(buffer);
}

// LibTorch 1.13's SGD::step, with the fused pass for the parameters it can take.
at::Tensor SGD::step(LossClosure closure) {
  const StatsOptions* measure = begin_step();
  ::torch::NoGradGuard no_grad;
  at::Tensor loss;
  if (closure) {
    at::AutoGradMode enable_grad(true);
    loss = closure();
  }
  for (auto& group : param_groups()) {
    const auto& o = static_cast<const ::torch::optim::SGDOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      void* const key = optim_internal::state_key(p);
      auto found = state().find(key);
      const bool first = found == state().end();
      at::Tensor d_p = p.grad();
      if (o.momentum() != 0 && plain_float(p) && plain_float(d_p)) {
        if (first) {  // the buffer the first step fills (LibTorch clones d_p into it)
          auto s = std::make_unique<::torch::optim::SGDParamState>();
          s->momentum_buffer(at::empty_like(p, at::MemoryFormat::Contiguous));
          state()[key] = std::move(s);
        }
      }
      at::Tensor buffer;
      if (o.momentum() != 0 && state().count(key))
        buffer = static_cast<::torch::optim::SGDParamState&>(*state()[key]).momentum_buffer();
      if (plain_float(p) && plain_float(d_p) && (o.momentum() == 0 || plain_float(buffer))) {
        const SgdCoefficients c =
            sgd_coefficients(o.lr(), o.momentum(), o.dampening(), o.weight_decay(), o.nesterov(), first);
        float* pp = p.data_ptr<float>();
        float* bp = o.momentum() != 0 ? buffer.data_ptr<float>() : nullptr;
        const float* gp = d_p.data_ptr<float>();
        FusedStats stats;
        optim_internal::run_chunked(p.numel(), measure != nullptr, &stats,
                                    [&](int64_t at, int64_t n, FusedStats* part) {
                                      sgd_pass(pp + at, gp + at, bp ? bp + at : nullptr, n, c,
                                               measure ? *measure : StatsOptions{}, part);
                                    });
        if (measure) record(p, stats);
        continue;
      }
      if (o.weight_decay() != 0) d_p = d_p.add(p, o.weight_decay());
      if (o.momentum() != 0) {
        at::Tensor buf;
        if (first) {
          buf = at::clone(d_p).detach();
          auto s = std::make_unique<::torch::optim::SGDParamState>();
          s->momentum_buffer(buf);
          state()[key] = std::move(s);
        } else {
          buf = static_cast<::torch::optim::SGDParamState&>(*state()[key]).momentum_buffer();
          buf.mul_(o.momentum()).add_(d_p, 1 - o.dampening());
        }
        d_p = o.nesterov() ? d_p.add(buf, o.momentum()) : buf;
      }
      p.add_(d_p, -o.lr());
    }
  }
  return loss;
}

}  // namespace gradscope::torch
