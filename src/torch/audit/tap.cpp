// Audit: taps. A tap records a node's activation now and its output gradient in backward
// (a hook on the tensor); pre-activations feed SATURATED. On a step that is not audited a tap
// costs the id lookup and one integer test.
#include <algorithm>

#include "aten_stats.h"
#include "audit/state.h"
#include "audit/channel_math.h"
#include "gradscope/core/error.h"
#include "gradscope/core/stats/scaled.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {
namespace {

// A channel view has to fit the tensor its node taps (LibTorch's movedim and narrow would
// throw their own errors, with a backtrace, deep inside the audit), and keep its channel count:
// the rules add channels up across steps, as each step ends.
void check_channel_view(const Audit::State::Entry& entry, const ChannelView& view, const at::Tensor& x) {
  const std::string& id = entry.id;
  const std::string who = "audit: channel view of '" + id + "': ";
  const int64_t dim = view.dim < 0 ? view.dim + x.dim() : view.dim;
  if (dim < 0 || dim >= x.dim())
    throw Error(who + "dim " + std::to_string(view.dim) + " out of range for a tensor with " +
                std::to_string(x.dim()) + " dims");
  if (entry.channels > 0 && x.size(dim) > 0 && x.size(dim) != entry.channels)  // 0: nothing to add
    throw Error(who + std::to_string(x.size(dim)) + " channels, but " + std::to_string(entry.channels) +
                " at an earlier sampled step; a channel view needs one channel count");
  for (const auto& [begin, end] : view.groups)
    if (end > x.size(dim))
      throw Error(who + "group [" + std::to_string(begin) + ", " + std::to_string(end) + ") out of range for " +
                  std::to_string(x.size(dim)) + " channels");
}

// Branches compared for LEAKAGE are paired sample by sample, so both need the same first
// dimension; checked when the second one is tapped, while the caller can still see why.
void check_leakage_input(const Audit::State& s, const std::string& id, const at::Tensor& x) {
  const std::string who = "audit: tap: node '" + id + "': ";
  if (x.dim() == 0) throw Error(who + "a leakage pair needs a tensor with a sample dimension, got a scalar");
  for (const auto& [a, b] : s.options.leakage_pairs) {
    if (a != id && b != id) continue;
    const std::string& other = a == id ? b : a;
    const auto it = s.leakage_inputs.find(s.by_id.at(other));
    if (it != s.leakage_inputs.end() && it->second.size(0) != x.size(0))
      throw Error(who + std::to_string(x.size(0)) + " samples, but '" + other + "' (its leakage pair) had " +
                  std::to_string(it->second.size(0)) + " at this step");
  }
}

// The channel view's measures of one tap: per-channel statistics, effective rank, and the
// similarity of its channel groups.
void record_channel_view(Audit::State& s, int index, const ChannelView& view, const at::Tensor& x) {
  Audit::State::Entry& entry = s.entries[static_cast<std::size_t>(index)];
  const std::string& id = entry.id;
  ChannelRecord& c = s.pending_channels[index];
  c.step = s.step;
  c.node = id;
  if (internal::use_aten_stats(x)) {  // with the step's other summaries, as it ends
    const int64_t channels = x.size(view.dim);
    s.deferred.push_back({Audit::State::Deferred::To::kChannelActivation, s.batch.add_slices(x, view.dim, "channels"),
                          static_cast<std::size_t>(index), static_cast<std::size_t>(channels)});
    if (channels > 0) entry.channels = channels;
  } else {
    c.activation = internal::per_channel_stats(x, view.dim, s.stats_options);
    if (!c.activation.empty()) entry.channels = static_cast<int64_t>(c.activation.size());
  }
  c.effective_rank = internal::effective_rank(x, view.dim);
  const std::size_t first_similarity = s.current.similarities.size();
  const auto& groups = view.groups;
  for (std::size_t i = 0; i < groups.size(); ++i)
    for (std::size_t j = i + 1; j < groups.size(); ++j) {
      auto slice = [&](const std::pair<int64_t, int64_t>& g) {
        return x.detach().narrow(view.dim, g.first, g.second - g.first).movedim(view.dim, 1);
      };
      auto name = [&](const std::pair<int64_t, int64_t>& g) {
        return id + "[" + std::to_string(g.first) + ":" + std::to_string(g.second) + "]";
      };
      s.current.similarities.push_back({s.step, id, name(groups[i]) + " vs " + name(groups[j]),
                                        internal::linear_cka(slice(groups[i]), slice(groups[j]))});
    }
  if (s.spectra) s.spectra_channel_view(id, view, x, first_similarity);  // many processes: the job's at step()
}

}  // namespace

void Audit::State::note_tap(int index) {
  // A node tapped for the first time (at any step) goes right after the node tapped before
  // it in this step, so late or conditional nodes land next to their neighbours.
  if (std::find(tap_sequence.begin(), tap_sequence.end(), index) == tap_sequence.end()) {
    auto at = tap_sequence.begin();
    if (last_tapped_step == step && last_tapped >= 0)
      at = std::find(tap_sequence.begin(), tap_sequence.end(), last_tapped) + 1;
    tap_sequence.insert(at, index);
  }
  last_tapped = index;
  last_tapped_step = step;
}

at::Tensor Audit::State::tap(int index, const at::Tensor& x) {
  Entry& entry = entries[static_cast<std::size_t>(index)];
  if (!x.defined()) throw Error("audit: tap: node '" + entry.id + "': undefined tensor");
  if (!entry_audited(entry) || !training_pass(index, /*consume=*/true)) return x;

  const int64_t at_step = step;
  const ChannelView* view = entry.channel_view;
  const bool channel_step = view && audit_index() % view->every == 0;
  const bool leakage_step = entry.leakage && audit_index() % options.leakage_every == 0;
  // Every check before anything is recorded: a tap that throws leaves no trace.
  if (channel_step) check_channel_view(entry, *view, x);
  if (leakage_step) {
    std::lock_guard<std::mutex> lock(mutex);
    check_leakage_input(*this, entry.id, x);
  }
  // The ATen path queues x on the step's batch instead (defer_record): one copy per step.
  const bool aten = internal::use_aten_stats(x);
  const Stats stats = aten ? Stats{} : stats_of(x, entry.id, stats_options);  // reads the data; no detach needed
  const bool histogram = histogram_step();
  ElementHistogram elements;
  if (histogram) elements = element_histogram(x, at_step, entry.id, Site::kActivation);
  // The factor its output gradient will carry: the loss scale, and with ranks that average
  // their gradients the world size (AuditOptions::ranks_average_gradients).
  double scale = 1;
  {
    std::lock_guard<std::mutex> lock(mutex);
    scale = loss_scale * output_grad_factor;
    // Queued first: a tensor the ATen path refuses leaves no trace.
    if (aten) defer_record({at_step, entry.id, Site::kActivation, stats}, x, entry.id);
    if (histogram) add_histogram(std::move(elements));
    if (first_audited < 0) first_audited = at_step;
    note_tap(index);
    if (!aten) current.records.push_back({at_step, entry.id, Site::kActivation, stats});
    if (channel_step) record_channel_view(*this, index, *view, x);
    if (leakage_step) leakage_inputs[index] = x.detach().clone();
  }

  if (x.requires_grad()) {
    std::weak_ptr<State> weak = weak_from_this();
    const int64_t dim = channel_step ? view->dim : 0;
    x.register_hook([weak, index, at_step, channel_step, dim, histogram, scale](const at::Tensor& grad) {
      auto state = weak.lock();
      if (!state || !grad.defined()) return;
      const Entry& e = state->entries[static_cast<std::size_t>(index)];
      // The ATen path: queued on the step's batch, placed as the step ends (one copy a step).
      // A loss-scaled gradient: measured against thresholds scaled alike, then divided back.
      const bool aten = internal::use_aten_stats(grad);
      const StatsOptions options = state->options_for(scale);
      const Stats g = aten ? Stats{} : unscaled(stats_of(grad, e.grad_name, options), scale);
      std::vector<Stats> per_channel;
      if (channel_step && !aten) {
        per_channel = internal::per_channel_stats(grad, dim, options);
        for (Stats& c : per_channel) c = unscaled(c, scale);
      }
      ElementHistogram elements;  // buckets are fixed edges: counted on the unscaled values
      if (histogram) elements = element_histogram(scale == 1 ? grad : grad / scale, at_step, e.id, Site::kOutputGrad);
      std::lock_guard<std::mutex> lock(state->mutex);
      if (aten) state->defer_record({at_step, e.id, Site::kOutputGrad, g}, grad, e.grad_name, scale);  // may throw
      if (histogram) state->add_histogram(std::move(elements));
      if (aten) {
        if (channel_step)
          state->deferred.push_back({Deferred::To::kChannelGrad, state->batch.add_slices(grad, dim, "channels", scale),
                                     static_cast<std::size_t>(index), static_cast<std::size_t>(grad.size(dim)), scale});
        return;
      }
      state->current.records.push_back({at_step, e.id, Site::kOutputGrad, g});
      if (channel_step) {
        auto& c = state->pending_channels[index];
        if (c.output_grad.empty()) c.output_grad = std::move(per_channel);
        else
          for (std::size_t i = 0; i < per_channel.size() && i < c.output_grad.size(); ++i)
            c.output_grad[i] = merge(c.output_grad[i], per_channel[i]);
      }
    });
  }
  return x;
}

void Audit::State::pre_activation(int index, const at::Tensor& x) {
  const Entry& entry = entries[static_cast<std::size_t>(index)];
  if (!x.defined()) throw Error("audit: pre-activation: node '" + entry.id + "': undefined tensor");
  if (!entry_audited(entry) || !training_pass(index, /*consume=*/false)) return;
  if (internal::use_aten_stats(x)) {  // queued on the step's batch: one copy per step
    std::lock_guard<std::mutex> lock(mutex);
    return defer_record({step, entry.id, Site::kPreActivation, Stats{}}, x, entry.id);
  }
  const Stats pre = stats_of(x, entry.id, stats_options);
  std::lock_guard<std::mutex> lock(mutex);
  current.records.push_back({step, entry.id, Site::kPreActivation, pre});
}

at::Tensor Audit::tap(const ::torch::nn::Module& module, const at::Tensor& x) {
  const auto it = state_->by_module.find(&module);
  if (it == state_->by_module.end())
    throw Error("audit: module of type " + module.name() + " is not an audited node or submodule");
  return state_->tap(it->second, x);
}

at::Tensor Audit::tap(const std::string& id, const at::Tensor& x) {
  const auto found = state_->by_id.find(id);
  if (found == state_->by_id.end()) throw Error("audit: tap: " + state_->unknown_id_message(id));
  return state_->tap(found->second, x);
}

void Audit::record_pre_activation(const std::string& id, const at::Tensor& x) {
  const auto found = state_->by_id.find(id);
  if (found == state_->by_id.end()) throw Error("audit: pre-activation: " + state_->unknown_id_message(id));
  state_->pre_activation(found->second, x);
}

}  // namespace gradscope::torch
