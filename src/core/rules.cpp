#include "gradscope/core/rules.h"

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

bool has_data(const Stats& s) { return s.count > 0; }

void set_first(int64_t& first, bool crossed, int64_t step) {
  if (crossed && first < 0) first = step;
}

}  // namespace

void ReportBuilder::SiteAccum::finish_step(const Thresholds& t) {
  if (step < 0) return;
  const Stats& s = current;
  set_first(first_nan, s.nan > 0, step);
  set_first(first_inf, s.inf() > 0, step);
  if (has_data(s)) {
    ++steps;
    const double l2 = s.l2();
    sum_l2 += l2;
    set_first(first_below_lo, l2 < t.grad_lo, step);
    set_first(first_above_hi, l2 > t.grad_hi, step);
    max_frac_zero = std::max(max_frac_zero, s.frac_zero());
    max_frac_saturated = std::max(max_frac_saturated, s.frac_saturated());
    set_first(first_dead, s.frac_zero() > t.dead_frac, step);
    set_first(first_saturated, s.frac_saturated() > t.saturation_frac, step);
  }
  current = Stats{};
  step = -1;
}

ReportBuilder::ReportBuilder(Thresholds thresholds) : thresholds_(thresholds) {
  thresholds_.validate();
}

void ReportBuilder::declare(const std::string& node) {
  if (index_.emplace(node, nodes_.size()).second) {
    nodes_.emplace_back();
    nodes_.back().node = node;
  }
}

void ReportBuilder::add(const Record& record) {
  declare(record.node);
  NodeAccum& n = nodes_[index_.at(record.node)];
  if (record.step < 0) throw Error("node '" + record.node + "': negative step " + std::to_string(record.step));
  if (record.step < n.last_step)
    throw Error("node '" + record.node + "': step " + std::to_string(record.step) +
                " arrived after step " + std::to_string(n.last_step) + " (records must be in step order)");
  if (record.step != n.last_step) {
    ++n.steps;
    if (n.first_step < 0) n.first_step = record.step;
    n.last_step = record.step;
    all_steps_.insert(record.step);
  }
  SiteAccum& s = n.sites[static_cast<std::size_t>(record.site)];
  if (s.step != record.step) s.finish_step(thresholds_);
  s.seen = true;
  s.step = record.step;
  s.current = merge(s.current, record.stats);
  s.total = merge(s.total, record.stats);
}

Report ReportBuilder::build() const {
  Report report;
  report.thresholds = thresholds_;
  report.steps = static_cast<int64_t>(all_steps_.size());
  report.nodes.reserve(nodes_.size());
  for (const NodeAccum& n : nodes_) report.nodes.push_back(judge(n));
  return report;
}

NodeReport ReportBuilder::judge(NodeAccum n) const {
  const Thresholds& t = thresholds_;
  for (SiteAccum& s : n.sites) s.finish_step(t);
  auto site = [&](Site which) -> const SiteAccum& { return n.sites[static_cast<std::size_t>(which)]; };
  auto mean_l2 = [](const SiteAccum& s) {
    return s.steps ? s.sum_l2 / static_cast<double>(s.steps) : NodeReport::kNone;
  };

  NodeReport r;
  r.node = n.node;
  r.steps = n.steps;
  r.first_step = n.first_step;
  r.last_step = n.last_step;
  const SiteAccum& act = site(Site::kActivation);
  if (has_data(act.total)) {
    r.act_mean_abs = act.total.mean_abs();
    r.act_std = act.total.stddev();
  }
  r.out_grad_l2 = mean_l2(site(Site::kOutputGrad));
  r.param_grad_l2 = mean_l2(site(Site::kParamGrad));
  r.param_l2 = mean_l2(site(Site::kParam));
  r.grad_param_ratio = r.param_grad_l2 / r.param_l2;  // NaN when either is absent

  // NAN / INF: the site where they appeared first.
  int64_t total_count = 0;
  Evidence nan_ev, inf_ev;
  nan_ev.flag = Flag::kNaN;
  inf_ev.flag = Flag::kInf;
  for (int i = 0; i < kSiteCount; ++i) {
    const SiteAccum& s = n.sites[static_cast<std::size_t>(i)];
    total_count += s.total.count;
    r.nan += s.total.nan;
    r.inf += s.total.inf();
    if (s.first_nan >= 0 && (nan_ev.first_step < 0 || s.first_nan < nan_ev.first_step)) {
      nan_ev.site = static_cast<Site>(i);
      nan_ev.first_step = s.first_nan;
    }
    if (s.first_inf >= 0 && (inf_ev.first_step < 0 || s.first_inf < inf_ev.first_step)) {
      inf_ev.site = static_cast<Site>(i);
      inf_ev.first_step = s.first_inf;
    }
  }
  auto raise = [&](Evidence e) {
    r.flags.insert(e.flag);
    r.evidence.push_back(std::move(e));
  };
  if (r.nan > 0) {
    nan_ev.value = static_cast<double>(r.nan);
    nan_ev.measure = "NaN elements over all sites and steps";
    raise(nan_ev);
  }
  if (r.inf > 0) {
    inf_ev.value = static_cast<double>(r.inf);
    inf_ev.measure = "Inf elements over all sites and steps";
    raise(inf_ev);
  }

  // VANISHING / EXPLODING on parameter gradients, else output gradients.
  const Site grad_site =
      site(Site::kParamGrad).steps ? Site::kParamGrad : Site::kOutputGrad;
  const SiteAccum& g = site(grad_site);
  if (g.steps) {
    const double m = mean_l2(g);
    const std::string measure = std::string("mean ") + site_name(grad_site) + " L2 over " +
                                std::to_string(g.steps) + " steps";
    if (m < t.grad_lo) {
      raise({Flag::kVanishing, grad_site, g.first_below_lo, m, t.grad_lo, measure});
    } else if (m > t.grad_hi) {
      raise({Flag::kExploding, grad_site, g.first_above_hi, m, t.grad_hi, measure});
    }
  }

  // DEAD on activations only: tiny parameter-gradient elements are what VANISHING judges,
  // through the norm, so counting them here would flag the same thing twice.
  if (act.steps && act.max_frac_zero > t.dead_frac) {
    raise({Flag::kDead, Site::kActivation, act.first_dead, act.max_frac_zero, t.dead_frac,
           "max over steps of the activation fraction with |x| <= dead_eps"});
  }
  if (act.steps && act.max_frac_saturated > t.saturation_frac) {
    raise({Flag::kSaturated, Site::kActivation, act.first_saturated, act.max_frac_saturated,
           t.saturation_frac, "max over steps of the activation fraction with |x| > activation_saturation"});
  }
  if (total_count == 0) {
    raise({Flag::kNoData, Site::kParamGrad, -1, 0, 0, "elements recorded"});
  }
  if (r.flags.empty()) r.flags.insert(Flag::kHealthy);
  return r;
}

Report build_report(const std::vector<Record>& records, const Thresholds& thresholds) {
  ReportBuilder b(thresholds);
  for (const Record& r : records) b.add(r);
  return b.build();
}

}  // namespace gradscope
