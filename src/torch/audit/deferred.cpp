// Audit: the ATen path's summaries of one audited step, queued on one batch and placed where
// they belong as the step ends: one device-to-host copy per device per step (docs/devices.md).

#include "audit/state.h"
#include "gradscope/core/stats/scaled.h"

namespace gradscope::torch {

void Audit::State::defer_record(Record r, const at::Tensor& x, const std::string& name, double scale) {
  const std::size_t first = batch.add(x, name, scale);  // first: a tensor it refuses leaves no record
  current.records.push_back(std::move(r));
  deferred.push_back({Deferred::To::kRecord, first, current.records.size() - 1, 1, scale});
}

void Audit::State::defer_param(Deferred::To to, std::size_t param, const at::Tensor& x, const std::string& name,
                               double scale) {
  std::lock_guard<std::mutex> lock(mutex);
  deferred.push_back({to, batch.add(x, name, scale), param, 1, scale});
}

void Audit::State::resolve_stats() {
  if (deferred.empty()) return;
  using To = Deferred::To;
  const std::vector<Stats> out = batch.resolve();
  // In queue order: the fused path merges in the order it measures, and so does this.
  for (const Deferred& d : deferred) {
    const Stats x = unscaled(out[d.first], d.scale);  // a loss-scaled gradient, brought back
    if (d.to == To::kRecord) {
      current.records[d.target].stats = x;
      continue;
    }
    if (d.to == To::kChannelActivation || d.to == To::kChannelGrad) {
      const auto begin = out.begin() + static_cast<std::ptrdiff_t>(d.first);
      std::vector<Stats> channels(begin, begin + static_cast<std::ptrdiff_t>(d.count));
      for (Stats& c : channels) c = unscaled(c, d.scale);
      ChannelRecord& c = pending_channels[static_cast<int>(d.target)];
      if (d.to == To::kChannelActivation) c.activation = channels;
      else if (c.output_grad.empty()) c.output_grad = channels;
      else
        for (std::size_t i = 0; i < channels.size() && i < c.output_grad.size(); ++i)
          c.output_grad[i] = merge(c.output_grad[i], channels[i]);
      continue;
    }
    const Param& p = params[d.target];
    switch (d.to) {
      case To::kFrozen: into_sums(p, [&](EntrySums& s) { s.frozen = merge(s.frozen, x), s.any_frozen = true; }); break;
      case To::kValue: into_sums(p, [&](EntrySums& s) { s.value = merge(s.value, x), s.any_value = true; }); break;
      case To::kGradSnr: entries[static_cast<std::size_t>(p.node)].snr_sq_sum += x.sum_sq; [[fallthrough]];
      case To::kGrad: into_sums(p, [&](EntrySums& s) { s.grad = merge(s.grad, x), s.any_grad = true; }); break;
      case To::kUpdate: into_sums(p, [&](EntrySums& s) { s.update = merge(s.update, x), s.any_update = true; }); break;
      default: break;
    }
  }
  deferred.clear();
}

}  // namespace gradscope::torch
