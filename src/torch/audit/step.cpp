// Audit::step: parameter gradients (after backward has accumulated them), parameter values,
// and the real update across the optimizer step; then the step's channel and branch views. One
// function a phase: begin_step, measure_before_update, measure_updates, write_records, end_step.
#include <ATen/Functions.h>
#include <ATen/core/Tensor.h>

#include <iterator>
#include <optional>
#include <unordered_set>

#include "aten_stats.h"
#include "audit/state.h"
#include "audit/channel_math.h"
#include "gradscope/core/error.h"
#include "gradscope/core/stats/carry.h"
#include "gradscope/core/stats/scaled.h"
#include "gradscope/torch/optim/instrumented.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {
namespace {

// The gradient SNR sums each parameter's gradients across steps, so it needs one shape; a
// parameter given another one (weight.set_data) is an error before the step measures anything.
void check_snr_shapes(const Audit::State& s) {
  for (const Audit::State::Param& p : s.params) {
    const at::Tensor& grad = p.tensor.grad();
    if (!p.snr_sum.defined() || !grad.defined() || grad.is_sparse()) continue;
    if (!grad.sizes().equals(p.snr_sum.sizes()))
      throw Error("audit: parameter '" + p.name + "': gradient shape changed from " + shape_of(p.snr_sum) + " to " +
                  shape_of(grad) + " since an earlier audited step; gradient_snr needs one shape");
  }
}

}  // namespace

void Audit::step(::torch::optim::Optimizer& optimizer) {
  // An optimizer of another model would leave this one unchanged, judged STAGNANT: say so.
  std::unordered_set<const c10::TensorImpl*> audited;
  for (const State::Param& p : state_->params) audited.insert(p.tensor.unsafeGetTensorImpl());
  bool holds_one = false;
  for (const auto& group : optimizer.param_groups())
    for (const at::Tensor& t : group.params()) holds_one = holds_one || audited.count(t.unsafeGetTensorImpl()) > 0;
  if (!holds_one)
    throw Error("audit: step: the optimizer holds none of the audited model's " + std::to_string(state_->params.size()) +
                " parameters; pass the optimizer of the audited model (or audit the model this optimizer trains)");
  step([&] { optimizer.step(); }, dynamic_cast<InstrumentedOptimizer*>(&optimizer));
}

void Audit::step(const std::function<void()>& apply_update) { step(apply_update, nullptr); }

namespace {

using State = Audit::State;
using Sums = State::EntrySums;
using To = State::Deferred::To;

// One audited step's phases (docs/architecture.md, "The audited step"): gather the step's
// settings, measure what the optimizer is about to read, let it update, measure what it
// changed, write the step's records, and end the step (judge, merge, hand over). What the
// phases share:
struct StepPass {
  State& s;
  int64_t step;
  double grad_scale;                 ///< the factor the gradients carry now (1 once unscaled)
  StatsOptions grad_options;         ///< the statistics' options for gradients at that scale
  bool histogram;                    ///< this step keeps element histograms
  InstrumentedOptimizer* measuring;  ///< the optimizer's fused pass, or nullptr
};

// Gather: the grad scale (mixed precision) and the step's buffers, kept across steps (no
// allocation).
StepPass begin_step(State& s, InstrumentedOptimizer* measuring) {
  const int64_t step = s.step;
  double grad_scale = 1;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.param_grads_unscaled) grad_scale = s.loss_scale;
  }
  if (s.options.gradient_snr) check_snr_shapes(s);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.first_audited < 0) s.first_audited = step;
  }
  s.sums.assign(s.entries.size(), Sums{});
  s.snapshotted.assign(s.params.size(), 0);
  s.fused.assign(s.params.size(), 0);
  s.had_grad.assign(s.entries.size(), 0);
  // Loss-scaled gradients are measured against scaled thresholds: the audit's own pass.
  if (measuring && grad_scale == 1) measuring->measure_next_step(s.stats_options);
  else measuring = nullptr;
  return {s, step, grad_scale, s.options_for(grad_scale), s.histogram_step(), measuring};
}

// Measure before the update: each parameter's value and gradient, and a snapshot of those the
// optimizer will update. The ATen path (aten_stats.h) queues its tensors on the step's batch
// instead: they join the sums in this same order as the batch resolves (write_records).
void measure_before_update(StepPass& pass) {
  State& s = pass.s;
  InstrumentedOptimizer* measuring = pass.measuring;
  const double grad_scale = pass.grad_scale;
  const StatsOptions& grad_options = pass.grad_options;
  const bool histogram = pass.histogram;
  auto into = [&](const State::Param& p, auto&& add) { s.into_sums(p, add); };
  // The parameters' data are read in place: a detached alias (a new TensorImpl a parameter,
  // every step) is only made on the rare paths that hand the tensor to LibTorch ops.
  for (std::size_t i = 0; i < s.params.size(); ++i) {
    State::Param& p = s.params[i];
    const at::Tensor& value = p.tensor;
    if (!p.tensor.requires_grad()) {
      if (internal::use_aten_stats(value)) {
        s.defer_param(To::kFrozen, i, value, p.name);
        continue;
      }
      const Stats v = stats_of(value, p.name, s.stats_options);
      into(p, [&](Sums& x) { x.frozen = merge(x.frozen, v), x.any_frozen = true; });
      continue;
    }
    const at::Tensor& grad = p.tensor.grad();
    // Only parameters with a gradient are updated by the optimizer step: snapshot those, in
    // the same read that measures them when the parameter is contiguous.
    // Not on the CPU (or GRADSCOPE_FORCE_ATEN_STATS): no view; measured on its device by
    // stats_of and snapshotted there by the clone below (aten_stats.h).
    const std::optional<TensorView> view =
        internal::use_aten_stats(value) ? std::nullopt : std::optional<TensorView>(view_of(value, p.name));
    // The optimizer's fused pass measures the value, the gradient and the update.
    const bool fused = measuring && grad.defined() && view && view->is_contiguous() && measuring->fuses(value);
    s.fused[i] = fused;
    Stats v;
    // Nothing wrote the parameter since the last update pass carried it: its value statistics
    // and snapshot are already there.
    const bool carried = !fused && !p.shard && grad.defined() && view && p.carried && value._version() == p.carried_version &&
                         p.snapshot.defined() && p.snapshot.sizes().equals(value.sizes());
    p.carried = false;
    if (fused) {
      s.snapshotted[i] = 1;
    } else if (carried) {
      v = p.carried_value;
      s.snapshotted[i] = 1;
    } else if (grad.defined() && view && view->is_contiguous()) {
      if (!p.snapshot.defined() || !p.snapshot.sizes().equals(value.sizes()) ||
          p.snapshot.scalar_type() != value.scalar_type())
        p.snapshot = at::empty_like(value.detach(), at::MemoryFormat::Contiguous);
      v = compute_and_copy(*view, p.snapshot.data_ptr(), s.stats_options);
      s.snapshotted[i] = 1;
    } else {
      if (view) v = compute(*view, s.stats_options);
      else s.defer_param(To::kValue, i, value, p.name);
      if (grad.defined()) {
        p.snapshot = value.detach().clone(at::MemoryFormat::Contiguous);
        s.snapshotted[i] = 1;
      }
    }
    if (view && !fused) into(p, [&](Sums& x) { x.value = merge(x.value, v), x.any_value = true; });
    if (grad.defined()) {
      const bool snr = s.options.gradient_snr && !grad.is_sparse();
      // Sparse gradients (Embedding with sparse=true): the summed values of touched rows.
      const bool aten = internal::use_aten_stats(grad);
      Stats g;
      if (aten) {
        s.defer_param(snr ? To::kGradSnr : To::kGrad, i, grad.is_sparse() ? grad.coalesce().values() : grad,
                      p.grad_name, grad_scale);
      } else if (!fused) {
        g = unscaled(grad.is_sparse() ? stats_of(grad.coalesce().values(), p.grad_name, grad_options)
                                      : stats_of(grad, p.grad_name, grad_options),
                     grad_scale);
        into(p, [&](Sums& x) { x.grad = merge(x.grad, g), x.any_grad = true; });
      }
      if (histogram) s.param_grad_histogram(p, grad_scale == 1 ? grad : grad / grad_scale);
      if (snr) {
        if (!p.snr_sum.defined()) p.snr_sum = at::zeros(grad.sizes(), grad.options().dtype(at::kDouble));
        p.snr_sum.add_(grad.to(at::kDouble) / grad_scale);
        if (!aten && !fused) s.entries[static_cast<std::size_t>(p.node)].snr_sq_sum += g.sum_sq;
        s.had_grad[static_cast<std::size_t>(p.node)] = 1;
      }
    }
  }
  for (std::size_t e = 0; e < s.entries.size(); ++e)
    if (s.had_grad[e]) ++s.entries[e].snr_steps;
}

// Measure after the update: the real change of each snapshotted parameter (or the fused
// pass's figures), and the value the next step starts from.
void measure_updates(StepPass& pass) {
  State& s = pass.s;
  InstrumentedOptimizer* measuring = pass.measuring;
  auto into = [&](const State::Param& p, auto&& add) { s.into_sums(p, add); };
  for (std::size_t i = 0; i < s.params.size(); ++i) {
    if (!s.snapshotted[i]) continue;
    State::Param& p = s.params[i];
    if (s.fused[i]) {
      const FusedStats* f = measuring->measured(p.tensor);
      if (!f)
        throw Error("audit: step: the instrumented optimizer did not update parameter '" + p.name +
                    "' in its measuring pass (did its gradient change between the audit and the optimizer?)");
      into(p, [&](Sums& x) {
        x.value = merge(x.value, f->value), x.any_value = true;
        x.grad = merge(x.grad, f->grad), x.any_grad = true;
        x.update = merge(x.update, f->update), x.any_update = true;
      });
      if (s.options.gradient_snr) s.entries[static_cast<std::size_t>(p.node)].snr_sq_sum += f->grad.sum_sq;
      continue;
    }
    const std::optional<TensorView> after =
        internal::use_aten_stats(p.tensor) ? std::nullopt : std::optional<TensorView>(view_of(p.tensor, p.name));
    Stats d;
    if (after && after->is_contiguous() && after->dtype() == DType::kFloat32 && s.options.sample_every == 1) {
      // One read of after and before: the update, and the next step's value and snapshot.
      const CarriedUpdate c = compute_update_and_carry(*after, p.snapshot.data_ptr<float>(), s.stats_options);
      d = c.update;
      p.carried = true;
      p.carried_value = c.value;
      p.carried_version = p.tensor._version();
    } else if (after && after->is_contiguous()) {
      const TensorView before = view_of(p.snapshot, p.before_name);
      d = compute_difference(*after, before, s.stats_options);  // after - before, never stored
    } else {
      at::sub_out(p.snapshot, p.tensor.detach(), p.snapshot);
      if (internal::use_aten_stats(p.snapshot)) {  // read now, on its device; copied at the end
        s.defer_param(To::kUpdate, i, p.snapshot, p.update_name);
        continue;
      }
      d = stats_of(p.snapshot, p.update_name, s.stats_options);
    }
    into(p, [&](Sums& x) { x.update = merge(x.update, d), x.any_update = true; });
  }

}

// Write, under the state's lock: the step's records from the per-entry sums, its channel and
// branch views.
void write_records(StepPass& pass) {
  State& s = pass.s;
  const int64_t step = pass.step;
  std::vector<Sums>& sums = s.sums;
  s.resolve_stats();  // the step's one device-to-host copy (per device) of the ATen path
  std::vector<Record>& records = s.current.records;
  for (std::size_t e = 0; e < s.entries.size(); ++e) {
    const Sums& x = sums[e];
    const std::string& id = s.entries[e].id;
    if (x.any_grad) records.push_back({step, id, Site::kParamGrad, x.grad});
    if (x.any_value) records.push_back({step, id, Site::kParam, x.value});
    if (x.any_frozen) records.push_back({step, id, Site::kFrozenParam, x.frozen});
    if (x.any_update) records.push_back({step, id, Site::kUpdate, x.update});
  }
  s.end_param_histograms();
  s.settle_loss_scale(step);  // a step skipped on overflow keeps no gradient records
  s.no_grad_forwards.clear();
  for (auto& [index, record] : s.pending_channels) s.current.channels.push_back(std::move(record));
  s.pending_channels.clear();
  for (const auto& [a, b] : s.options.leakage_pairs) {
    const auto x = s.leakage_inputs.find(s.by_id.at(a));
    const auto y = s.leakage_inputs.find(s.by_id.at(b));
    if (x == s.leakage_inputs.end() || y == s.leakage_inputs.end()) continue;
    const double cka = internal::linear_cka(x->second, y->second);
    s.current.similarities.push_back({step, a, b, cka});
    s.current.similarities.push_back({step, b, a, cka});
  }
  s.merge_spectra(step);  // many processes: the job's effective ranks and CKA
  s.leakage_inputs.clear();
  // Execution order is known once the first audited backward has run.
  for (auto& [tensor, handle] : s.order_hooks) tensor.remove_hook(handle);
  s.order_hooks.clear();
}

// End the step: judged and kept (records.cpp), or merged across ranks first
// (distributed.cpp), then handed to the callbacks without the lock.
void end_step(StepPass& pass, std::unique_lock<std::mutex>& lock) {
  State& s = pass.s;
  const int64_t step = pass.step;
  // The step that ends here, judged and kept (records.cpp). Many processes: the job's
  // records (distributed.cpp); with merge_async that is the previous audited step, and
  // this one's collective is left in flight.
  const StepRecords* ended = nullptr;
  if (!s.ranks) {
    s.current.step = step;
    ended = &s.end_step(s.current);
  } else {
    try {
      s.merge_step(step, ended);
    } catch (...) {
      lock.unlock();
      if (ended) s.hand_over(*ended);  // merged whole before this step's merge failed
      throw;
    }
  }
  ++s.step;
  if (!ended) return;
  // merge_async: this step's merge is in flight while on_step runs; a report() from there
  // must not hand it over before the ended step's callbacks return (State::handing_over).
  const bool in_flight = s.ranks && s.ranks->pending();
  s.handing_over = in_flight;
  lock.unlock();  // the callbacks may call back into the audit
  struct Reset {
    State* s;
    ~Reset() {
      if (!s) return;
      std::lock_guard<std::mutex> relock(s->mutex);
      s->handing_over = false;
    }
  } reset{in_flight ? &s : nullptr};
  s.hand_over(*ended);
}

}  // namespace

void Audit::step(const std::function<void()>& apply_update, InstrumentedOptimizer* measuring) {
  State& s = *state_;
  if (!s.audited()) {
    apply_update();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.no_grad_forwards.clear();
    ++s.step;
    return;
  }
  StepPass pass = begin_step(s, measuring);
  measure_before_update(pass);
  apply_update();
  measure_updates(pass);
  std::unique_lock<std::mutex> lock(s.mutex);
  write_records(pass);
  end_step(pass, lock);
}

}  // namespace gradscope::torch
