// Audit: what happens to a step's measurements when it ends (judged into per-node aggregates,
// kept in the ring, handed to on_step), and the views over them: records() and report().
#include <algorithm>
#include <limits>

#include "audit/state.h"
#include "gradscope/core/error.h"

namespace gradscope::torch {

std::size_t Audit::State::judge_into(ReportBuilder& builder, const StepRecords& step) const {
  // A record may come from an earlier step's tap (its backward ran late): fed in step order,
  // every node's records are in step order. Nearly always they are already.
  auto by_step = [](const Record& a, const Record& b) { return a.step < b.step; };
  std::size_t dropped = 0;
  auto add = [&](const Record& r) {
    try {
      builder.add(r);
    } catch (const Error&) {  // its node has been judged past that step
      ++dropped;
    }
  };
  if (std::is_sorted(step.records.begin(), step.records.end(), by_step)) {
    for (const Record& r : step.records) add(r);
  } else {
    std::vector<Record> sorted = step.records;
    std::stable_sort(sorted.begin(), sorted.end(), by_step);
    for (const Record& r : sorted) add(r);
  }
  for (const ChannelRecord& c : step.channels) builder.add(c);
  for (const SimilarityRecord& r : step.similarities) builder.add(r);
  for (const AttentionRecord& a : step.attention) {
    try {
      builder.add(a);
    } catch (const Error&) {  // another number of heads than its earlier steps'
      ++dropped;
    }
  }
  for (const StepScalar& x : step.scalars) builder.add(x);  // record_loss keeps steps in order
  return dropped;
}

const StepRecords& Audit::State::end_step(StepRecords& done) {
  if (const std::size_t dropped = judge_into(judged, done))
    warnings.push_back(std::to_string(dropped) + " record(s) of step " + std::to_string(done.step) +
                       " came from a step already judged (a backward run after step()?); left out of report()");
  if (options.keep_records) {
    kept.push(done);
    return kept.newest();
  }
  std::swap(handed, done);
  internal::clear_step(done);
  return handed;
}

namespace {

// The kept steps' `member` lists, oldest first, then the step being recorded's when given.
template <class T>
std::vector<T> collect(const internal::StepRing& kept, std::vector<T> StepRecords::*member,
                       const std::vector<T>* current) {
  std::vector<T> out;
  kept.for_each([&](const StepRecords& step) {
    out.insert(out.end(), (step.*member).begin(), (step.*member).end());
  });
  if (current) out.insert(out.end(), current->begin(), current->end());
  return out;
}

}  // namespace

// Many processes: a merge in flight (merge_async) is waited for first, so that every read
// includes every step whose step() has returned.
std::vector<Record> Audit::records() const {
  state_->settle();
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->resolve_stats();  // the ATen path: what this step has queued so far (one copy)
  return collect(state_->kept, &StepRecords::records, &state_->current.records);
}

// A step's channel views join it as it ends.
std::vector<ChannelRecord> Audit::channel_records() const {
  state_->settle();
  std::lock_guard<std::mutex> lock(state_->mutex);
  return collect<ChannelRecord>(state_->kept, &StepRecords::channels, nullptr);
}

std::vector<SimilarityRecord> Audit::similarity_records() const {
  state_->settle();
  std::lock_guard<std::mutex> lock(state_->mutex);
  return collect(state_->kept, &StepRecords::similarities, &state_->current.similarities);
}

Report Audit::report() const {
  state_->settle();
  const std::vector<std::string> order = node_ids();
  std::lock_guard<std::mutex> lock(state_->mutex);
  state_->resolve_stats();  // the ATen path: what this step has queued so far (one copy)
  const State& s = *state_;
  // The ended steps are judged already; the step being recorded joins a copy (O(nodes)).
  ReportBuilder builder = s.judged;
  s.judge_into(builder, s.current);
  Report report = builder.build(order);
  const NonFiniteOrigin& o = report.nonfinite_origin;
  if (s.ranks && o.found()) report.nonfinite_origin.rank = s.ranks->nonfinite_rank(o.step, o.node, o.site);
  report.loss_scale = s.loss_scale_report;
  judge_loss_scale(report.loss_scale);
  for (NodeReport& n : report.nodes) {
    const auto it = s.by_id.find(n.node);
    if (it == s.by_id.end()) continue;
    const State::Entry& e = s.entries[static_cast<std::size_t>(it->second)];
    if (!s.options.gradient_snr || e.snr_steps == 0) continue;
    // SNR = ||mean g||^2 / (mean ||g||^2 - ||mean g||^2), over audited steps.
    const double steps = static_cast<double>(e.snr_steps);
    double mean_sq = 0;
    for (std::size_t pi : e.params)
      if (s.params[pi].snr_sum.defined()) mean_sq += s.params[pi].snr_sum.pow(2).sum().item<double>();
    mean_sq /= steps * steps;
    const double noise = e.snr_sq_sum / steps - mean_sq;
    n.grad_snr = noise > 0 ? mean_sq / noise : std::numeric_limits<double>::infinity();
  }
  return report;
}

}  // namespace gradscope::torch
