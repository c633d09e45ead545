#include "gradscope/core/audit/series.h"

#include <algorithm>
#include <limits>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

int site_index(Site s) { return static_cast<int>(s); }

// The same gradient measure as the timeline and the rules: NaN wins, then Inf.
double gradient_norm(const Stats& s) {
  if (s.nan > 0) return kNaN;
  if (s.inf() > 0) return kInf;
  return s.has_finite() ? s.l2() : 0.0;
}

}  // namespace

SeriesBuilder::SeriesBuilder(int64_t max_steps) : max_steps_(max_steps) {
  if (max_steps < 0 || max_steps == 1)
    throw Error("series: max_steps must be 0 (keep all) or at least 2, got " +
                std::to_string(max_steps));
}

void SeriesBuilder::add(const Record& record) {
  if (started_ && record.step < pending_step_)
    throw Error("series: node '" + record.node + "': step " + std::to_string(record.step) +
                " arrived after step " + std::to_string(pending_step_) +
                " (records must be in step order)");
  if (!started_ || record.step != pending_step_) {
    if (started_) close_step();
    started_ = true;
    pending_step_ = record.step;
    ++step_ordinal_;
  }
  if (step_ordinal_ % stride_ != 0) return;  // a step thinning has already dropped
  auto [it, inserted] = index_.emplace(record.node, series_.size());
  if (inserted) {
    series_.push_back({record.node, {}});
    pending_.emplace_back();
  }
  Pending& p = pending_[it->second];
  const int s = site_index(record.site);
  p.sites[s] = p.has[s] ? merge(p.sites[s], record.stats) : record.stats;
  p.has[s] = true;
  p.any = true;
}

void SeriesBuilder::close_step() {
  bool kept = false;
  for (std::size_t i = 0; i < pending_.size(); ++i) {
    Pending& p = pending_[i];
    if (!p.any) continue;
    kept = true;
    SeriesPoint pt{pending_step_, kNaN, kNaN, kNaN, kNaN, kNaN, kNaN};
    for (Site g : kGradientSites) {
      if (!p.has[site_index(g)]) continue;
      pt.grad_norm = gradient_norm(p.sites[site_index(g)]);
      break;
    }
    const int act = site_index(Site::kActivation);
    if (p.has[act]) {
      const Stats& a = p.sites[act];
      pt.act_mean_abs = a.mean_abs();
      pt.act_std = a.stddev();
      pt.act_zero_frac = a.frac_zero();
      pt.act_saturated_frac = a.frac_saturated();
    }
    const int up = site_index(Site::kUpdate), par = site_index(Site::kParam);
    if (p.has[up] && p.has[par] && p.sites[par].l2() > 0)
      pt.update_ratio = p.sites[up].l2() / p.sites[par].l2();
    series_[i].points.push_back(pt);
    p = Pending{};
  }
  if (!kept) return;
  kept_steps_.push_back(pending_step_);
  if (max_steps_ > 0 && static_cast<int64_t>(kept_steps_.size()) > max_steps_) thin();
}

// Drops every other kept step (keeping the first) and halves the rate of later ones.
void SeriesBuilder::thin() {
  std::vector<int64_t> keep;
  for (std::size_t i = 0; i < kept_steps_.size(); i += 2) keep.push_back(kept_steps_[i]);
  for (NodeSeries& n : series_) {
    auto gone = [&](const SeriesPoint& pt) {
      return !std::binary_search(keep.begin(), keep.end(), pt.step);
    };
    n.points.erase(std::remove_if(n.points.begin(), n.points.end(), gone), n.points.end());
  }
  kept_steps_ = std::move(keep);
  stride_ *= 2;
}

std::vector<NodeSeries> SeriesBuilder::finish() {
  if (started_) close_step();
  started_ = false;
  return series_;
}

}  // namespace gradscope
