// Rounds grouped into windows (the timeline, split concentration, feature-usage drift), the
// features over the whole model.
#include <algorithm>
#include <cmath>
#include <map>

#include "trees/internal/parts.h"

namespace gradscope::tree_internal {
namespace {

using Shares = std::map<int32_t, double>;

int32_t window_size(const TreeThresholds& t, int32_t rounds) {
  if (rounds <= 0) return 0;
  return t.window > 0 ? std::min(t.window, rounds) : rule_window(rounds);
}

// What a feature weighs in a round: its gain, or its splits when the file has no gains.
double weight(const FeatureSplits& f, bool has_gain) {
  return has_gain ? f.gain : static_cast<double>(f.splits);
}

// Mean of the finite values of `field` over rounds [first, last].
template <typename F>
double mean_over(const std::vector<RoundDynamics>& rounds, int32_t first, int32_t last, F field) {
  double sum = 0;
  int n = 0;
  for (int32_t r = first; r <= last; ++r) {
    const double v = field(rounds[static_cast<std::size_t>(r)]);
    if (std::isfinite(v)) {
      sum += v;
      ++n;
    }
  }
  return n ? sum / n : WindowDynamics::kNone;
}

void concentration(WindowDynamics& w, const Shares& shares, const Shares* previous) {
  double total = 0;
  for (const auto& [f, v] : shares) total += v;
  if (!(total > 0)) return;
  w.hhi = 0;
  for (const auto& [f, v] : shares) {
    const double p = v / total;
    w.hhi += p * p;
    if (!(p <= w.top_share)) {  // also replaces the initial NaN; ties keep the lower feature
      w.top_share = p;
      w.top_feature = f;
    }
  }
  if (!previous) return;
  double prev_total = 0;
  for (const auto& [f, v] : *previous) prev_total += v;
  if (!(prev_total > 0)) return;
  // Total variation over the union of features: the share of the gain that moved.
  Shares diff;
  for (const auto& [f, v] : shares) diff[f] += v / total;
  for (const auto& [f, v] : *previous) diff[f] -= v / prev_total;
  w.drift = 0;
  for (const auto& [f, d] : diff) w.drift += std::fabs(d);
  w.drift /= 2;
}

}  // namespace

int32_t rule_window(int32_t rounds) {
  if (rounds <= 0) return 0;
  return std::min(std::max<int32_t>(5, (rounds + 19) / 20), rounds);
}

std::vector<WindowDynamics> windows_of(const TreeDynamicsReport& report, int32_t size) {
  const std::vector<RoundDynamics>& rounds = report.per_round;
  const int32_t n = static_cast<int32_t>(rounds.size());
  std::vector<WindowDynamics> windows;
  if (n == 0 || size <= 0) return windows;
  // Windows as equal as integers allow: each holds `size` or `size` - 1 rounds.
  const int32_t count = (n + size - 1) / size;
  Shares previous;
  for (int32_t w = 0; w < count; ++w) {
    WindowDynamics win;
    win.first_round = static_cast<int32_t>(int64_t{w} * n / count);
    win.last_round = static_cast<int32_t>(int64_t{w + 1} * n / count) - 1;
    win.contribution = mean_over(rounds, win.first_round, win.last_round,
                                 [](auto& r) { return r.contribution; });
    win.leaf_mean_abs = mean_over(rounds, win.first_round, win.last_round,
                                  [](auto& r) { return r.leaf_mean_abs; });
    win.velocity =
        mean_over(rounds, win.first_round, win.last_round, [](auto& r) { return r.velocity; });
    Shares shares;
    for (int32_t r = win.first_round; r <= win.last_round; ++r)
      for (const FeatureSplits& f : rounds[static_cast<std::size_t>(r)].features)
        shares[f.feature] += weight(f, report.has_gain);
    concentration(win, shares, w > 0 ? &previous : nullptr);
    previous = std::move(shares);
    win.train_loss = rounds[static_cast<std::size_t>(win.last_round)].train_loss;
    win.valid_loss = rounds[static_cast<std::size_t>(win.last_round)].valid_loss;
    windows.push_back(win);
  }
  return windows;
}

void measure_windows(TreeDynamicsReport& report) {
  const std::vector<RoundDynamics>& rounds = report.per_round;
  report.window = window_size(report.thresholds, static_cast<int32_t>(rounds.size()));
  report.windows = windows_of(report, report.window);

  std::map<int32_t, FeatureTotal> totals;
  double all = 0;
  for (const RoundDynamics& r : rounds)
    for (const FeatureSplits& f : r.features) {
      FeatureTotal& t = totals[f.feature];
      if (t.first_round < 0) t.first_round = r.round;
      t.feature = f.feature;
      t.splits += f.splits;
      t.gain += f.gain;
      all += weight(f, report.has_gain);
    }
  report.features.clear();
  for (auto& [f, t] : totals) {
    t.share = all > 0 ? (report.has_gain ? t.gain : static_cast<double>(t.splits)) / all : 0;
    report.features.push_back(t);
  }
  std::stable_sort(report.features.begin(), report.features.end(),
                   [](const FeatureTotal& a, const FeatureTotal& b) { return a.share > b.share; });
}

}  // namespace gradscope::tree_internal
