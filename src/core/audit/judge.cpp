// The rules of rules.h: one node's accumulated records -> flags with evidence; then the
// report-wide findings (where NaN/Inf started, roll-up of submodule flags).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "gradscope/core/audit/rules.h"

namespace gradscope {
namespace {

// "3, 7, 9 (of 64)" with at most eight ids.
std::string channel_list(const std::vector<std::size_t>& ids, std::size_t total) {
  std::string out = "channels ";
  for (std::size_t i = 0; i < ids.size() && i < 8; ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > 8) out += ", ...";
  return out + " (of " + std::to_string(total) + ")";
}

int64_t first_nonfinite(int64_t nan_step, int64_t inf_step) {
  if (nan_step < 0) return inf_step;
  if (inf_step < 0) return nan_step;
  return std::min(nan_step, inf_step);
}

}  // namespace

NodeReport ReportBuilder::judge(NodeAccum n) const {
  const Thresholds& t = thresholds_;
  auto site = [&](Site which) -> const SiteAccum& { return n.sites[static_cast<std::size_t>(which)]; };
  // Over the steps with a finite value; steps whose values were all NaN or Inf are left out
  // (and counted in nonfinite_steps) rather than averaged in as 0.
  auto mean_l2 = [](const SiteAccum& s) {
    return s.finite_steps ? s.sum_l2 / static_cast<double>(s.finite_steps) : NodeReport::kNone;
  };

  NodeReport r;
  r.node = n.node;
  r.steps = n.steps;
  r.first_step = n.first_step;
  r.last_step = n.last_step;
  const SiteAccum& act = site(Site::kActivation);
  if (act.total.count > 0) {
    r.act_mean_abs = act.total.mean_abs();
    r.act_std = act.total.stddev();
  }
  r.out_grad_l2 = mean_l2(site(Site::kOutputGrad));
  // The gradient the rules judge: the first of kGradientSites with records (record.h). The
  // parameter-gradient column shows it unless it is the output gradient.
  Site grad_site = Site::kOutputGrad;
  for (Site g : kGradientSites)
    if (site(g).steps) {
      grad_site = g;
      break;
    }
  const Site param_grad_site = grad_site == Site::kOutputGrad ? Site::kParamGrad : grad_site;
  r.param_grad_l2 = mean_l2(site(param_grad_site));
  // Frozen parameters count towards the node's parameter norm.
  const SiteAccum& param = site(Site::kParam);
  const SiteAccum& frozen = site(Site::kFrozenParam);
  if (param.finite_steps || frozen.finite_steps) {
    const double steps = static_cast<double>(std::max(param.finite_steps, frozen.finite_steps));
    r.param_l2 = (param.sum_l2 + frozen.sum_l2) / steps;
  }
  r.grad_param_ratio = r.param_grad_l2 / r.param_l2;  // NaN when either is absent
  if (n.update_steps) r.update_ratio = n.sum_update_ratio / static_cast<double>(n.update_steps);

  judge_nonfinite(n, r);

  // The attention rules, per head (core/attention/rules.h).
  for (Evidence& e : judge_attention(n.heads, t)) r.raise(std::move(e));

  // VANISHING / EXPLODING on parameter gradients, else output gradients.
  const SiteAccum& g = site(grad_site);
  if (g.steps) {
    const double m = mean_l2(g);
    const std::string measure = std::string("mean ") + site_name(grad_site) + " L2 over " +
                                std::to_string(g.finite_steps) + " steps";
    if (m < t.grad_lo) {
      r.raise({Flag::kVanishing, grad_site, g.first_below_lo, m, t.grad_lo, measure, {}});
    } else if (m > t.grad_hi) {
      r.raise({Flag::kExploding, grad_site, g.first_above_hi, m, t.grad_hi, measure, {}});
    }
  }

  // GRADIENT_SPIKE: the first step the node's gradient burst out of its band.
  if (n.grad_spikes > 0) {
    const SeriesSpike& sp = n.grad_spike_list.front();
    const std::string count = std::to_string(n.grad_spikes) + (n.grad_spikes == 1 ? " step" : " steps");
    char buf[160];
    std::snprintf(buf, sizeof buf, "gradient L2 %.4g after at most %.4g; z %.3g against its band", sp.value,
                  sp.window_max, sp.z);
    r.raise({Flag::kGradientSpike, grad_site, sp.step, sp.value / sp.window_max, t.grad_spike_ratio,
             "gradient L2 / the largest of its last " + std::to_string(t.spike_window) + " steps",
             std::string(buf) + "; " + count + " with such a burst"});
  }

  if (act.steps && act.max_frac_zero > t.dead_frac) {
    r.raise({Flag::kDead, Site::kActivation, act.first_dead, act.max_frac_zero, t.dead_frac,
             "max over steps of the activation fraction with |x| <= dead_eps", {}});
  }
  // SATURATED only on the pre-activation: the input of a squashing function (tanh, sigmoid,
  // hardtanh, softsign), recorded only where one follows. A large output elsewhere (a Linear
  // feeding a residual stream and a LayerNorm) is no saturation: its gradient is not flat.
  const SiteAccum& pre = site(Site::kPreActivation);
  if (pre.steps && pre.max_frac_saturated > t.saturation_frac) {
    r.raise({Flag::kSaturated, Site::kPreActivation, pre.first_saturated, pre.max_frac_saturated, t.saturation_frac,
             "max over steps of the pre-activation fraction with |x| > activation_saturation", {}});
  }
  if (n.first_stagnant >= 0) {
    r.raise({Flag::kStagnant, Site::kUpdate, n.first_stagnant, n.stagnant_max_ratio, t.update_ratio_lo,
             "largest ||update|| / ||param|| over " + std::to_string(t.stagnant_steps) +
                 " consecutive steps",
             "longest run " + std::to_string(n.longest_stagnant) + " steps"});
  }
  judge_channels(n, r);
  judge_leakage(n, r);

  judge_presence(n, param_grad_site, r);
  if (r.flags.empty()) r.flags.insert(Flag::kHealthy);
  return r;
}

// NAN / INF: counted over every site, each with the site where it appeared first.
void ReportBuilder::judge_nonfinite(const NodeAccum& n, NodeReport& r) const {
  Evidence nan_ev, inf_ev;
  nan_ev.flag = Flag::kNaN;
  inf_ev.flag = Flag::kInf;
  for (int i = 0; i < kSiteCount; ++i) {
    const SiteAccum& s = n.sites[static_cast<std::size_t>(i)];
    r.nan += s.total.nan;
    r.inf += s.total.inf();
    r.nonfinite_steps = std::max(r.nonfinite_steps, s.steps - s.finite_steps);
    if (s.first_nan >= 0 && (nan_ev.first_step < 0 || s.first_nan < nan_ev.first_step)) {
      nan_ev.site = static_cast<Site>(i);
      nan_ev.first_step = s.first_nan;
    }
    if (s.first_inf >= 0 && (inf_ev.first_step < 0 || s.first_inf < inf_ev.first_step)) {
      inf_ev.site = static_cast<Site>(i);
      inf_ev.first_step = s.first_inf;
    }
  }
  // The first of the NaN/Inf flags says how many steps the means left out.
  std::string left_out;
  if (r.nonfinite_steps > 0)
    left_out = "; " + std::to_string(r.nonfinite_steps) + " steps without a finite value left out of the means";
  if (r.nan > 0) {
    nan_ev.value = static_cast<double>(r.nan);
    nan_ev.measure = "NaN elements over all sites and steps" + left_out;
    left_out.clear();
    r.raise(nan_ev);
  }
  if (r.inf > 0) {
    inf_ev.value = static_cast<double>(r.inf);
    inf_ev.measure = "Inf elements over all sites and steps" + left_out;
    r.raise(inf_ev);
  }
}

// FROZEN (parameters that never got a gradient) or NO_DATA (nothing recorded): what the audit
// could not see, judged last.
void ReportBuilder::judge_presence(const NodeAccum& n, Site param_grad_site, NodeReport& r) const {
  auto site = [&](Site which) -> const SiteAccum& { return n.sites[static_cast<std::size_t>(which)]; };
  const SiteAccum& act = site(Site::kActivation);
  const SiteAccum& param = site(Site::kParam);
  const SiteAccum& frozen = site(Site::kFrozenParam);
  const bool has_params = param.steps > 0 || frozen.steps > 0;
  const bool saw_grad = site(param_grad_site).seen;
  const bool saw_activity = act.seen || site(Site::kOutputGrad).seen || saw_grad;
  // A boosted-tree node has data; the tree rules (trees/dynamics.h) judge it, not these.
  bool tree_node = false;
  for (int i = 0; i < kSiteCount; ++i) {
    const bool seen = n.sites[static_cast<std::size_t>(i)].seen;
    tree_node = tree_node || (is_tree_site(static_cast<Site>(i)) && seen);
  }
  if (has_params && !saw_grad && (frozen.steps > 0 || act.seen)) {
    r.raise({Flag::kFrozen, frozen.steps ? Site::kFrozenParam : Site::kParam, n.first_step, 0, 0,
             "parameter gradients recorded",
             frozen.steps ? "parameters do not require gradients" : "ran forward, no gradient reached it"});
  } else if (!tree_node && (!saw_activity ||
             (act.total.count == 0 && site(Site::kOutputGrad).total.count == 0 &&
              site(param_grad_site).total.count == 0))) {
    r.raise({Flag::kNoData, Site::kActivation, -1, 0, 0, "activation or gradient elements recorded", {}});
  }
}

void ReportBuilder::judge_channels(const NodeAccum& n, NodeReport& r) const {
  const Thresholds& t = thresholds_;
  if (n.effective_rank_samples)
    r.effective_rank = n.sum_effective_rank / static_cast<double>(n.effective_rank_samples);
  if (n.channel_act.empty()) return;
  r.channels = static_cast<int64_t>(n.channel_act.size());
  std::vector<std::size_t> dead, live;
  for (std::size_t c = 0; c < n.channel_act.size(); ++c) {
    if (n.channel_act[c].count == 0) continue;
    (n.channel_act[c].frac_zero() > t.dead_frac ? dead : live).push_back(c);
  }
  // Ignored: live channels whose output-gradient L2 is below ignored_channel_ratio x the
  // median over live channels. Relative, so a node whose whole gradient is small (VANISHING)
  // does not also report every channel.
  std::vector<std::size_t> ignored;
  std::vector<double> grad_l2;
  for (std::size_t c : live)
    if (c < n.channel_grad.size() && n.channel_grad[c].count > 0) grad_l2.push_back(n.channel_grad[c].l2());
  if (!grad_l2.empty()) {
    std::vector<double> sorted = grad_l2;
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2), sorted.end());
    const double median = sorted[sorted.size() / 2];
    for (std::size_t c : live)
      if (median > 0 && c < n.channel_grad.size() && n.channel_grad[c].count > 0 &&
          n.channel_grad[c].l2() < t.ignored_channel_ratio * median)
        ignored.push_back(c);
  }
  r.dead_channels = static_cast<int64_t>(dead.size());
  r.ignored_channels = static_cast<int64_t>(ignored.size());
  const double enough = t.channel_frac * static_cast<double>(n.channel_act.size());
  if (static_cast<double>(dead.size()) > enough)
    r.raise({Flag::kDeadChannels, Site::kActivation, r.first_step, static_cast<double>(dead.size()), t.dead_frac,
             "channels (more than channel_frac of them) with activation zero fraction above dead_frac",
             channel_list(dead, n.channel_act.size())});
  if (static_cast<double>(ignored.size()) > enough)
    r.raise({Flag::kIgnoredChannels, Site::kOutputGrad, r.first_step, static_cast<double>(ignored.size()),
             t.dead_frac,
             "live channels (more than channel_frac of them) with output-gradient L2 below ignored_channel_ratio x "
             "the median channel",
             channel_list(ignored, n.channel_act.size())});
}

void ReportBuilder::judge_leakage(const NodeAccum& n, NodeReport& r) const {
  const std::string* worst = nullptr;
  double worst_mean = -1;
  for (const auto& [other, acc] : n.cka) {
    const double mean = acc[0] / acc[1];
    if (mean > thresholds_.leakage_cka && mean > worst_mean) {
      worst = &other;
      worst_mean = mean;
    }
  }
  if (!worst) return;
  const auto first = n.first_leak.find(*worst);
  r.raise({Flag::kLeakage, Site::kActivation, first == n.first_leak.end() ? -1 : first->second, worst_mean,
           thresholds_.leakage_cka, "mean linear CKA over sampled steps", "with " + *worst});
}

NonFiniteOrigin ReportBuilder::find_origin(const std::vector<NodeAccum>& nodes) {
  NonFiniteOrigin o;
  auto first_at = [](const NodeAccum& n, Site s) {
    const SiteAccum& a = n.sites[static_cast<std::size_t>(s)];
    return first_nonfinite(a.first_nan, a.first_inf);
  };
  for (const NodeAccum& n : nodes)
    for (int i = 0; i < kSiteCount; ++i) {
      const int64_t f = first_at(n, static_cast<Site>(i));
      if (f >= 0 && (o.step < 0 || f < o.step)) o.step = f;
    }
  if (o.step < 0) return o;
  // Forward: the first node in execution order whose output went non-finite.
  for (const NodeAccum& n : nodes) {
    for (Site s : {Site::kPreActivation, Site::kActivation}) {
      if (first_at(n, s) == o.step) {
        o.node = n.node;
        o.phase = "forward";
        o.site = s;
        return o;
      }
    }
  }
  // Backward runs in reverse: values created inside a node's backward reach its parameter
  // gradients and every earlier node, so the origin is the last node in execution order.
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
    for (Site s : {Site::kParamGrad, Site::kOutputGrad, Site::kUpdate, Site::kParam, Site::kFrozenParam,
                   Site::kEmbeddingRows}) {
      if (first_at(*it, s) == o.step) {
        o.node = it->node;
        o.phase = (s == Site::kParamGrad || s == Site::kOutputGrad || s == Site::kEmbeddingRows) ? "backward"
                                                                                                 : "optimizer";
        o.site = s;
        return o;
      }
    }
  }
  return o;
}

void ReportBuilder::roll_up(std::vector<NodeReport>& nodes) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < nodes.size(); ++i) index[nodes[i].node] = i;
  // Deepest first: every child is finished (its own roll-up applied) before its parent.
  std::vector<std::size_t> order(nodes.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto depth = [&](std::size_t i) { return std::count(nodes[i].node.begin(), nodes[i].node.end(), '/'); };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return depth(a) > depth(b); });

  std::map<std::size_t, std::map<Flag, std::vector<std::size_t>>> pending;  // parent -> flag -> children
  for (std::size_t i : order) {
    NodeReport& node = nodes[i];
    for (const auto& [flag, children] : pending[i]) {
      if (node.flags.contains(flag)) continue;
      std::string in = "in:";
      int64_t first = -1;
      for (std::size_t c : children) {
        in += (in.size() > 3 ? ", " : " ") + nodes[c].node.substr(node.node.size() + 1);
        for (const Evidence& e : nodes[c].evidence)
          if (e.flag == flag && e.first_step >= 0 && (first < 0 || e.first_step < first)) first = e.first_step;
      }
      node.flags.erase(Flag::kHealthy);
      node.flags.insert(flag);
      node.evidence.push_back({flag, Site::kParamGrad, first, static_cast<double>(children.size()), 0,
                               "submodules flagged", in});
    }
    const auto slash = node.node.rfind('/');
    if (slash == std::string::npos) continue;
    const auto parent = index.find(node.node.substr(0, slash));
    if (parent == index.end()) continue;
    for (Flag f : node.flags.list())
      if (f != Flag::kHealthy) pending[parent->second][f].push_back(i);
  }
}

}  // namespace gradscope
