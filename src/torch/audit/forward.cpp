// Audit::forward: runs a Sequential child by child and taps each audited child's group, and
// does the same inside a Sequential child that holds scoped submodules. The children are
// resolved to entries once per Sequential (a plan), not looked up on every call; on a step
// that is not audited the children just run.
#include <c10/util/Exception.h>
#include <torch/nn/modules/activation.h>

#include "audit/state.h"
#include "gradscope/core/error.h"

namespace gradscope::torch {
namespace {

bool squashes(const ::torch::nn::Module& m) {
  return dynamic_cast<const ::torch::nn::TanhImpl*>(&m) || dynamic_cast<const ::torch::nn::SigmoidImpl*>(&m) ||
         dynamic_cast<const ::torch::nn::HardtanhImpl*>(&m) || dynamic_cast<const ::torch::nn::SoftsignImpl*>(&m);
}

Audit::State::ForwardPlan make_plan(const Audit::State& s, const ::torch::nn::SequentialImpl& sequential) {
  Audit::State::ForwardPlan plan;
  plan.sequential = &sequential;
  const auto children = sequential.children();
  const std::size_t n = children.size();
  auto entry_of = [&](std::size_t i) {
    const auto found = s.by_module.find(children[i].get());
    return found == s.by_module.end() ? -1 : found->second;
  };
  int current = -1;  // the audited child whose group is running
  for (std::size_t i = 0; i < n; ++i) {
    plan.children.push_back(children[i].get());
    const bool last = i + 1 == n;
    const bool next_audited = !last && entry_of(i + 1) >= 0;
    plan.pre_activation.push_back(-1);
    if (entry_of(i) >= 0) {
      current = entry_of(i);
      // The group goes on into a squashing function: keep the module's own output, whose
      // magnitude is what saturates tanh or sigmoid (SATURATED). After ReLU and the like the
      // group's output already shows it, so that pass is skipped.
      if (!last && !next_audited && squashes(*children[i + 1])) plan.pre_activation.back() = current;
    }
    // Tap at the end of a group: before the next audited child, or at the end.
    plan.tap_after.push_back(current >= 0 && (next_audited || last) ? current : -1);
    if (plan.tap_after.back() >= 0) current = -1;
    // A Sequential child holding scoped submodules runs child by child too, so that they are
    // tapped, grouped with the parameter-free children after them, as at the top level.
    plan.nested.push_back(nullptr);
    if (auto* inner = dynamic_cast<::torch::nn::SequentialImpl*>(children[i].get()))
      for (const auto& m : inner->modules(/*include_self=*/false))
        if (s.by_module.count(m.get())) plan.nested.back() = inner;
  }
  return plan;
}

// The plan for `sequential`, made again when its children changed since.
const Audit::State::ForwardPlan& plan_for(Audit::State& s, ::torch::nn::SequentialImpl& sequential) {
  for (Audit::State::ForwardPlan& plan : s.plans) {
    if (plan.sequential != &sequential) continue;
    bool same = plan.children.size() == sequential.size();
    std::size_t i = 0;
    for (auto it = sequential.begin(); same && it != sequential.end(); ++it, ++i)
      same = it->ptr().get() == plan.children[i];
    if (!same) plan = make_plan(s, sequential);
    return plan;
  }
  s.plans.push_back(make_plan(s, sequential));
  return s.plans.back();
}

}  // namespace

at::Tensor Audit::forward(::torch::nn::SequentialImpl& sequential, at::Tensor x) {
  State& s = *state_;
  if (!x.defined()) throw Error("audit: forward: undefined input");
  const State::ForwardPlan* plan = s.audited() ? &plan_for(s, sequential) : nullptr;
  std::size_t i = 0;
  for (auto it = sequential.begin(); it != sequential.end(); ++it, ++i) {
    try {
      x = plan && plan->nested[i] ? forward(*plan->nested[i], x) : it->forward(x);
    } catch (const c10::Error& e) {  // the user's model failed: say which child, no backtrace
      const auto children = sequential.named_children();
      throw Error("audit: forward: child '" + children[i].key() + "' (" + children[i].value()->name() + "): " + e.msg());
    }
    if (!plan) continue;
    if (plan->pre_activation[i] >= 0) s.pre_activation(plan->pre_activation[i], x);
    if (plan->tap_after[i] >= 0) x = s.tap(plan->tap_after[i], x);
  }
  return x;
}

}  // namespace gradscope::torch
