// ReportBuilder: accumulation of records per node and per step. The judging is in judge.cpp.
#include "gradscope/core/audit/rules.h"

#include <algorithm>
#include <cstdio>
#include <cmath>

#include "gradscope/core/audit/depth.h"
#include "gradscope/core/error.h"

namespace gradscope {
namespace {

void set_first(int64_t& first, bool crossed, int64_t step) {
  if (crossed && first < 0) first = step;
}

}  // namespace

void ReportBuilder::SiteAccum::finish_step(int64_t step, const Thresholds& t) {
  const Stats& s = current;
  // The per-step tests (step_judgement.h), shared with TensorBoard's flags and the timeline.
  const SiteCrossings c = site_crossings(s, t);
  set_first(first_nan, c.nan, step);
  set_first(first_inf, c.inf, step);
  if (s.count > 0) {
    ++steps;
    // A step with no finite value has no L2: it stays out of the means and of the gradient
    // thresholds, and is counted so the report can say so.
    if (s.has_finite()) {
      ++finite_steps;
      sum_l2 += s.l2();
      set_first(first_below_lo, c.below_grad_lo, step);
      set_first(first_above_hi, c.above_grad_hi, step);
    }
    max_frac_zero = std::max(max_frac_zero, s.frac_zero());
    max_frac_saturated = std::max(max_frac_saturated, s.frac_saturated());
    set_first(first_dead, c.dead, step);
    set_first(first_saturated, c.saturated, step);
  }
  current = Stats{};
}

void ReportBuilder::NodeAccum::finish_step(const Thresholds& t) {
  if (last_step < 0) return;
  const Stats& param = sites[static_cast<std::size_t>(Site::kParam)].current;
  const Stats& update = sites[static_cast<std::size_t>(Site::kUpdate)].current;
  if (const std::optional<double> r = update_ratio(param, update)) {
    const double ratio = *r;
    sum_update_ratio += ratio;
    ++update_steps;
    const int64_t before = stagnant.length;
    const bool long_enough = stagnant.add(ratio, t);
    if (stagnant.length > 0) {
      if (before == 0) stagnant_run_start = last_step;
      longest_stagnant = std::max(longest_stagnant, stagnant.length);
      if (first_stagnant < 0) stagnant_max_ratio = std::max(stagnant_max_ratio, ratio);
      if (long_enough && first_stagnant < 0) first_stagnant = stagnant_run_start;
    } else if (first_stagnant < 0) {
      stagnant_max_ratio = 0;
    }
  }
  // GRADIENT_SPIKE: this step's gradient L2 (the first gradient site with records) against
  // the node's own band, before it joins the band.
  for (Site g : kGradientSites) {
    const Stats& grad = sites[static_cast<std::size_t>(g)].current;
    if (grad.count == 0) continue;
    if (grad.has_finite() && grad.nan == 0 && grad.inf() == 0) {
      const double l2 = grad.l2();
      if (auto spike = test_gradient_spike(grad_max, grad_band, last_step, l2, t)) {
        ++grad_spikes;
        if (grad_spike_list.size() < kKeptSpikes) grad_spike_list.push_back(*spike);
      }
      grad_band.push(l2);
      grad_max.push(l2);
      if (early_grad.size() < kDepthSteps) early_grad.emplace_back(last_step, l2);
    }
    break;
  }
  for (SiteAccum& s : sites)
    if (s.seen) s.finish_step(last_step, t);
}

ReportBuilder::ReportBuilder(Thresholds thresholds) : thresholds_(thresholds), series_(thresholds) {
  thresholds_.validate();
}

void ReportBuilder::declare(const std::string& name) {
  if (index_.emplace(name, nodes_.size()).second) {
    nodes_.emplace_back();
    nodes_.back().node = name;
    nodes_.back().grad_band = RecentBand(thresholds_.spike_window);
    nodes_.back().grad_max = RecentMax(thresholds_.spike_window);
  }
}

void ReportBuilder::add(const StepScalar& scalar) { series_.add(scalar); }

ReportBuilder::NodeAccum& ReportBuilder::node(const std::string& name) {
  declare(name);
  return nodes_[index_.at(name)];
}

void ReportBuilder::add(const Record& record) {
  if (record.step < 0)
    throw Error("node '" + record.node + "': negative step " + std::to_string(record.step));
  NodeAccum& n = node(record.node);
  if (record.step < n.last_step)
    throw Error("node '" + record.node + "': step " + std::to_string(record.step) +
                " arrived after step " + std::to_string(n.last_step) +
                " (records must be in step order)");
  if (record.step != n.last_step) {
    n.finish_step(thresholds_);
    ++n.steps;
    if (n.first_step < 0) n.first_step = record.step;
    n.last_step = record.step;
    if (record.step > latest_step_) {
      latest_step_ = record.step;
      ++steps_;
    }
  }
  SiteAccum& s = n.sites[static_cast<std::size_t>(record.site)];
  s.seen = true;
  s.current = merge(s.current, record.stats);
  s.total = merge(s.total, record.stats);
}

void ReportBuilder::add(const ChannelRecord& record) {
  NodeAccum& n = node(record.node);
  auto accumulate = [&](std::vector<Stats>& into, const std::vector<Stats>& from, const char* what) {
    if (from.empty()) return;
    if (into.empty()) into.resize(from.size());
    if (into.size() != from.size())
      throw Error("node '" + record.node + "': " + what + " has " + std::to_string(from.size()) +
                  " channels at step " + std::to_string(record.step) + ", earlier " +
                  std::to_string(into.size()));
    for (std::size_t c = 0; c < from.size(); ++c) into[c] = merge(into[c], from[c]);
  };
  accumulate(n.channel_act, record.activation, "activation");
  accumulate(n.channel_grad, record.output_grad, "output gradient");
  if (std::isfinite(record.effective_rank)) {
    n.sum_effective_rank += record.effective_rank;
    ++n.effective_rank_samples;
  }
}

void ReportBuilder::add(const AttentionRecord& record) {
  NodeAccum& n = node(record.node);
  if (n.heads.empty()) n.heads.resize(record.heads.size());
  if (n.heads.size() != record.heads.size())
    throw Error("node '" + record.node + "': attention has " + std::to_string(record.heads.size()) +
                " heads at step " + std::to_string(record.step) + ", earlier " + std::to_string(n.heads.size()));
  for (std::size_t h = 0; h < record.heads.size(); ++h) n.heads[h].add(record.step, record.heads[h], thresholds_);
}

void ReportBuilder::add(const SimilarityRecord& record) {
  NodeAccum& n = node(record.node);
  auto& acc = n.cka[record.other];
  acc[0] += record.cka;
  acc[1] += 1;
  if (record.cka > thresholds_.leakage_cka && !n.first_leak.count(record.other))
    n.first_leak[record.other] = record.step;
}

Report ReportBuilder::build() const { return build_nodes(nodes_); }

Report ReportBuilder::build(const std::vector<std::string>& order) const {
  std::vector<NodeAccum> nodes;
  nodes.reserve(std::max(order.size(), nodes_.size()));
  std::vector<char> taken(nodes_.size(), 0);
  for (const std::string& name : order) {
    const auto it = index_.find(name);
    if (it == index_.end()) {
      nodes.emplace_back();
      nodes.back().node = name;
    } else if (!taken[it->second]) {
      taken[it->second] = 1;
      nodes.push_back(nodes_[it->second]);
    }
  }
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (!taken[i]) nodes.push_back(nodes_[i]);
  return build_nodes(std::move(nodes));
}

Report ReportBuilder::build_nodes(std::vector<NodeAccum> nodes) const {
  for (NodeAccum& n : nodes) n.finish_step(thresholds_);
  Report report;
  report.thresholds = thresholds_;
  report.steps = steps_;
  report.nodes.reserve(nodes.size());
  for (const NodeAccum& n : nodes) report.nodes.push_back(judge(n));
  report.nonfinite_origin = find_origin(nodes);
  report.series = series_.finish();
  report.series.leads = spike_leads(nodes, report.series.onset());
  judge_depth(nodes, report);
  roll_up(report.nodes);
  return report;
}

std::vector<SpikeLead> ReportBuilder::spike_leads(const std::vector<NodeAccum>& nodes, int64_t onset) const {
  std::vector<SpikeLead> leads;
  if (onset < 0) return leads;
  for (const NodeAccum& n : nodes)
    for (const SeriesSpike& s : n.grad_spike_list) {
      if (s.step > onset) break;
      if (s.step < onset - thresholds_.spike_lookback) continue;
      leads.push_back({n.node, s.step, onset - s.step, s.z, s.value / s.window_max});
      break;  // its first spike in the window
    }
  // Earliest first; at one step, the larger burst first.
  std::stable_sort(leads.begin(), leads.end(), [](const SpikeLead& a, const SpikeLead& b) {
    return a.step != b.step ? a.step < b.step : a.ratio > b.ratio;
  });
  return leads;
}

void ReportBuilder::judge_depth(const std::vector<NodeAccum>& nodes, Report& report) const {
  std::vector<NodeGradients> grads;
  grads.reserve(nodes.size());
  for (const NodeAccum& n : nodes) grads.push_back({n.node, &n.early_grad});
  const std::optional<DepthImbalance> d = find_depth_imbalance(grads, report.series, thresholds_);
  if (!d) return;
  // A first block with a flag that says more (the depth row's yields_to) keeps that flag alone.
  const uint32_t says_more = flag_info(Flag::kDepthGradientImbalance).yields_to;
  for (const NodeReport& r : report.nodes)
    for (const std::string& first : d->first_nodes)
      if ((r.node == first || node_inside(r.node, first)) && r.flags.contains_any(says_more)) return;
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "%s's gradient L2 over %.4g x %s's at each of %d audited steps from step %lld (%lld blocks); the "
                "loss %.4g over its last %d steps against %.4g early",
                d->last_block.c_str(), thresholds_.depth_grad_ratio, d->first_block.c_str(), thresholds_.depth_window,
                static_cast<long long>(d->since), static_cast<long long>(d->blocks), d->late_loss,
                SeriesReport::kLateLosses, d->early_loss);
  for (NodeReport& r : report.nodes) {
    if (std::find(d->first_nodes.begin(), d->first_nodes.end(), r.node) == d->first_nodes.end()) continue;
    r.raise({Flag::kDepthGradientImbalance, Site::kParamGrad, d->since, d->ratio, thresholds_.depth_grad_ratio,
             "smallest " + d->last_block + " / " + d->first_block + " gradient L2 over the " +
                 std::to_string(thresholds_.depth_window) + " steps where it is largest",
             buf});
  }
}

Report build_report(const std::vector<Record>& records, const Thresholds& thresholds) {
  ReportBuilder b(thresholds);
  for (const Record& r : records) b.add(r);
  return b.build();
}

}  // namespace gradscope
