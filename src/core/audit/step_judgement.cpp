#include "gradscope/core/audit/step_judgement.h"

namespace gradscope {

SiteCrossings site_crossings(const Stats& s, const Thresholds& t) {
  SiteCrossings c;
  c.nan = s.nan > 0;
  c.inf = s.inf() > 0;
  if (s.count == 0) return c;
  // A step with no finite value has no L2 (Stats::l2 reads 0 for it): it crosses no gradient
  // threshold, and the report counts it apart.
  if (s.has_finite()) {
    const double l2 = s.l2();
    c.below_grad_lo = l2 < t.grad_lo;
    c.above_grad_hi = l2 > t.grad_hi;
  }
  c.dead = s.frac_zero() > t.dead_frac;
  c.saturated = s.frac_saturated() > t.saturation_frac;
  return c;
}

std::optional<double> update_ratio(const Stats& param, const Stats& update) {
  if (param.count == 0 || update.count == 0) return std::nullopt;
  if (param.nan + param.inf() + update.nan + update.inf() > 0) return std::nullopt;
  if (!(param.l2() > 0)) return std::nullopt;
  return update.l2() / param.l2();
}

void NodeStep::add(Site site, const Stats& s) {
  const auto i = static_cast<std::size_t>(site);
  sites[i] = has[i] ? merge(sites[i], s) : s;
  has[i] = true;
}

const Stats* NodeStep::gradient(Site* site) const {
  for (Site g : kGradientSites)
    if (const Stats* s = get(g)) {
      if (site) *site = g;
      return s;
    }
  return nullptr;
}

FlagSet step_flags(const NodeStep& step, StagnantRun& run, const Thresholds& t, FlagSet* tested) {
  FlagSet on, seen;
  const auto test = [&](Flag f, bool crossed) {
    seen.insert(f);
    if (crossed) on.insert(f);
  };
  if (const Stats* g = step.gradient()) {
    const SiteCrossings c = site_crossings(*g, t);
    test(Flag::kVanishing, c.below_grad_lo);
    test(Flag::kExploding, c.above_grad_hi);
  }
  const Stats* param = step.get(Site::kParam);
  const Stats* update = step.get(Site::kUpdate);
  if (param && update)
    if (const std::optional<double> r = update_ratio(*param, *update)) test(Flag::kStagnant, run.add(*r, t));
  const Stats* act = step.get(Site::kActivation);
  const Stats* pre = step.get(Site::kPreActivation);
  if (act) test(Flag::kDead, site_crossings(*act, t).dead);
  // Only the input of a squashing function saturates (judge.cpp says why).
  if (pre) test(Flag::kSaturated, site_crossings(*pre, t).saturated);
  bool nan = false, inf = false;
  for (std::size_t s = 0; s < step.sites.size(); ++s)
    if (step.has[s]) {
      const SiteCrossings c = site_crossings(step.sites[s], t);
      nan = nan || c.nan;
      inf = inf || c.inf;
    }
  test(Flag::kNaN, nan);
  test(Flag::kInf, inf);
  if (tested) *tested = seen;
  return on;
}

}  // namespace gradscope
