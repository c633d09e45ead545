#include "gradscope/core/audit/timeline.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>

#include "gradscope/core/audit/step_judgement.h"
#include "gradscope/core/error.h"

namespace gradscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

FlowEntry make_entry(uint32_t node, const Stats& s, const Thresholds& t) {
  FlowEntry e;
  e.node = node;
  e.mean_abs_grad = s.has_finite() ? s.mean_abs() : 0.0;
  e.max_abs_grad = s.inf() > 0 ? kInf : s.max_abs;
  e.grad_norm = s.nan > 0 ? kNaN : s.inf() > 0 ? kInf : (s.has_finite() ? s.l2() : 0.0);
  if (s.nan > 0) e.mean_abs_grad = e.max_abs_grad = kNaN;
  // The rules' per-step test (step_judgement.h); a frame counts a NaN or Inf gradient as
  // exploding, as trustformers' animation did, and never as vanishing.
  const SiteCrossings c = site_crossings(s, t);
  e.is_exploding = c.nonfinite() || c.above_grad_hi;
  e.is_vanishing = !c.nonfinite() && c.below_grad_lo;
  return e;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::string frames_text(int64_t n, int64_t of) {
  return std::to_string(n) + " of " + std::to_string(of) + " frame" + (of == 1 ? "" : "s");
}

}  // namespace

bool Frame::has_issue() const {
  for (const FlowEntry& e : layers)
    if (e.is_vanishing || e.is_exploding) return true;
  return false;
}

Timeline::Timeline(Thresholds thresholds, std::size_t max_frames)
    : thresholds_(thresholds), max_frames_(max_frames) {
  thresholds_.validate();
}

uint32_t Timeline::node_index(const std::string& name) {
  auto it = index_.find(name);
  if (it != index_.end()) return it->second;
  const auto id = static_cast<uint32_t>(nodes_.size());
  index_.emplace(name, id);
  nodes_.push_back(name);
  pending_.emplace_back();
  return id;
}

void Timeline::add(const Record& record) {
  const int rank = gradient_site_rank(record.site);
  if (rank < 0) return;
  if (record.step < pending_step_)
    throw Error("timeline: node '" + record.node + "': step " + std::to_string(record.step) +
                " arrived after step " + std::to_string(pending_step_) +
                " (records must be in step order)");
  if (record.step != pending_step_) {
    finish();
    pending_step_ = record.step;
  }
  const uint32_t id = node_index(record.node);
  Pending& p = pending_[id];
  if (std::none_of(std::begin(p.has), std::end(p.has), [](bool h) { return h; })) pending_order_.push_back(id);
  p.grad[rank] = p.has[rank] ? merge(p.grad[rank], record.stats) : record.stats;
  p.has[rank] = true;
}

void Timeline::finish() {
  if (pending_order_.empty()) return;
  Frame frame;
  frame.step = pending_step_;
  // Rows in first-seen node order, whatever order this step's records came in.
  std::sort(pending_order_.begin(), pending_order_.end());
  frame.layers.reserve(pending_order_.size());
  double largest = 0;
  for (uint32_t id : pending_order_) {
    Pending& p = pending_[id];
    const int rank = static_cast<int>(std::find(std::begin(p.has), std::end(p.has), true) - std::begin(p.has));
    frame.layers.push_back(make_entry(id, p.grad[rank], thresholds_));
    p = Pending{};
    const double n = frame.layers.back().grad_norm;
    if (std::isfinite(n)) largest = std::max(largest, n);
  }
  pending_order_.clear();
  for (FlowEntry& e : frame.layers) {
    if (!std::isfinite(e.grad_norm)) e.flow_intensity = 1.0;
    else e.flow_intensity = largest > 0 ? std::min(1.0, e.grad_norm / largest) : 0.0;
  }
  frames_.push_back(std::move(frame));
  if (max_frames_ > 0 && frames_.size() > max_frames_) {
    frames_.pop_front();
    ++dropped_;
  }
}

const char* flow_health_name(FlowHealth health) {
  switch (health) {
    case FlowHealth::kHealthy: return "healthy";
    case FlowHealth::kMinorIssues: return "minor issues";
    case FlowHealth::kProblemsDetected: return "problems detected";
    case FlowHealth::kCritical: return "critical";
  }
  return "invalid";
}

FlowHealth classify_flow(int64_t frames, int64_t issue_frames, bool any_vanishing,
                         bool any_exploding, const Thresholds& t) {
  const double ratio = frames > 0 ? static_cast<double>(issue_frames) / static_cast<double>(frames) : 0.0;
  if (any_exploding && ratio > t.flow_critical_ratio) return FlowHealth::kCritical;
  if (any_exploding || ratio > t.flow_problems_ratio) return FlowHealth::kProblemsDetected;
  if (any_vanishing || ratio > t.flow_minor_ratio) return FlowHealth::kMinorIssues;
  return FlowHealth::kHealthy;
}

FlowSummary summarize_flow(const Timeline& timeline) {
  FlowSummaryBuilder builder(timeline.thresholds());
  for (const Frame& f : timeline.frames()) builder.add(f);
  return builder.finish(timeline.nodes());
}

FlowSummaryBuilder::FlowSummaryBuilder(Thresholds thresholds) : thresholds_(thresholds) {
  thresholds_.validate();
}

void FlowSummaryBuilder::add(const Frame& f) {
  FlowSummary& s = summary_;
  if (s.first_step < 0) s.first_step = f.step;
  s.last_step = f.step;
  ++s.frames;
  if (f.has_issue()) ++s.issue_frames;
  for (const FlowEntry& e : f.layers) {
    if (e.node >= s.nodes.size()) {
      s.nodes.resize(e.node + 1);
      norms_.resize(e.node + 1);
    }
    NodeFlow& n = s.nodes[e.node];
    ++n.frames;
    if (e.is_vanishing) {
      any_vanishing_ = true;
      if (n.vanishing_frames++ == 0) n.first_vanishing = f.step;
    }
    if (e.is_exploding) {
      any_exploding_ = true;
      if (n.exploding_frames++ == 0) n.first_exploding = f.step;
    }
    if (!std::isnan(e.grad_norm)) norms_[e.node].push_back(e.grad_norm);
  }
}

FlowSummary FlowSummaryBuilder::finish(const std::vector<std::string>& nodes) {
  const Thresholds& t = thresholds_;
  FlowSummary s = std::move(summary_);
  summary_ = FlowSummary{};
  s.nodes.resize(nodes.size());
  norms_.resize(nodes.size());
  for (std::size_t i = 0; i < s.nodes.size(); ++i) {
    NodeFlow& n = s.nodes[i];
    n.node = nodes[i];
    std::vector<double>& v = norms_[i];
    if (v.empty()) {
      n.median_norm = n.min_norm = n.max_norm = kNaN;
      continue;
    }
    // The median by selection, not a full sort: the same value in linear time.
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    n.median_norm = v.size() % 2 ? *mid : (*std::max_element(v.begin(), mid) + *mid) / 2;
    const auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    n.min_norm = *lo;
    n.max_norm = *hi;
  }
  norms_.clear();
  s.issue_ratio = s.frames > 0 ? static_cast<double>(s.issue_frames) / static_cast<double>(s.frames) : 0.0;
  s.health = classify_flow(s.frames, s.issue_frames, any_vanishing_, any_exploding_, t);
  any_vanishing_ = any_exploding_ = false;

  for (const NodeFlow& n : s.nodes) {
    if (n.vanishing_frames > 0)
      s.recommendations.push_back(
          n.node + ": gradient L2 < " + num(t.grad_lo) + " in " + frames_text(n.vanishing_frames, n.frames) +
          " since step " + std::to_string(n.first_vanishing) + " (median " + num(n.median_norm) +
          ", lowest " + num(n.min_norm) +
          "); try residual connections, normalisation, Xavier/Kaiming initialisation or a larger "
          "learning rate");
    if (n.exploding_frames > 0)
      s.recommendations.push_back(
          n.node + ": gradient L2 > " + num(t.grad_hi) + " or non-finite in " +
          frames_text(n.exploding_frames, n.frames) + " since step " + std::to_string(n.first_exploding) +
          " (largest " + num(n.max_norm) + ", median " + num(n.median_norm) +
          "); clip gradients (clip_grad_norm_) or lower the learning rate");
  }
  const std::string share = std::to_string(s.issue_frames) + " of " + std::to_string(s.frames) +
                            " frames with issues";
  switch (s.health) {
    case FlowHealth::kCritical:
      s.recommendations.push_back("critical: " + share +
                                  " and gradients exploding; stop training and fix the nodes above");
      break;
    case FlowHealth::kProblemsDetected:
      s.recommendations.push_back("problems detected: " + share +
                                  "; review depth, initialisation and the learning-rate schedule");
      break;
    case FlowHealth::kMinorIssues:
      s.recommendations.push_back("minor issues: " + share + "; keep watching the nodes above");
      break;
    case FlowHealth::kHealthy:
      s.recommendations.push_back("healthy: " + share + "; no action needed");
      break;
  }
  return s;
}

}  // namespace gradscope
