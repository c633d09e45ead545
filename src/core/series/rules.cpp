#include "gradscope/core/series/rules.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

// A spike of `value` at `step`, with the band it was tested against.
SeriesSpike spike_against(int64_t step, double value, const BandTest& b) {
  SeriesSpike s;
  s.step = step;
  s.value = value;
  s.band_mean = b.mean;
  s.band_sd = b.sd;
  s.z = b.z;
  return s;
}

}  // namespace

std::optional<SeriesSpike> test_spike(const RecentBand& band, double early_max, int64_t step, double value,
                                      const Thresholds& t) {
  if (!std::isfinite(value)) return std::nullopt;
  const BandTest b = band.test(value, t.spike_sigma, t.spike_min_history);
  // The early rule compares with a maximum above zero only: 10 x a non-positive loss says nothing.
  const bool early = std::isfinite(early_max) && early_max > 0 && value >= t.spike_early_factor * early_max;
  if (!b.above && !early) return std::nullopt;
  SeriesSpike s = spike_against(step, value, b);
  s.early_max = std::isfinite(early_max) ? early_max : SeriesSpike::kNone;
  s.early_rule = early;
  return s;
}

std::optional<SeriesSpike> test_gradient_spike(const RecentMax& window, const RecentBand& band, int64_t step,
                                               double value, const Thresholds& t) {
  if (!std::isfinite(value) || window.size() < kGradSpikeHistory) return std::nullopt;
  const double highest = window.max();
  if (!(highest > 0 && value > t.grad_spike_ratio * highest)) return std::nullopt;
  SeriesSpike s = spike_against(step, value, band.test(value, t.spike_sigma, 1));
  s.window_max = highest;
  return s;
}

namespace {
// Thresholds checked before the windows they size are allocated.
const Thresholds& validated(const Thresholds& t) {
  t.validate();
  return t;
}
}  // namespace

SeriesTracker::SeriesTracker(Thresholds thresholds)
    : t_(validated(thresholds)), band_(t_.spike_window), window_max_(t_.spike_window) {}

void SeriesTracker::add(const StepScalar& x) {
  auto check = [&](int64_t& last) {
    if (x.step < last)
      throw Error("series '" + x.name + "': step " + std::to_string(x.step) + " after step " + std::to_string(last));
    const bool repeat = x.step == last;
    last = x.step;
    return !repeat;
  };
  if (x.name == kLossSeries) {
    if (check(last_loss_step_)) add_loss(x.step, x.value);
  } else if (x.name == kGradNormSeries) {
    if (check(last_norm_step_)) add_norm(x.step, x.value);
  } else if (x.name == kClippedGradNormSeries) {
    if (check(last_clipped_step_)) add_clipped(x.step, x.value);
  } else if (x.name == kBatchSeries) {
    if (check(last_batch_step_)) add_batch(x.step, x.value);
  }
}

bool SeriesTracker::departs(double value, double highest, int64_t seen) const {
  // The highest of a few first losses is no band: a loss that starts a hair below its plateau
  // (a classifier at log(classes), 2.280 then 2.30 for 60 steps: measured on a CNN) would
  // "stay above" it. Until spike_min_history losses are seen, a departure must clear the
  // highest by kShortWindowRise of its size; the LSTM blow-ups rise 5-30x.
  if (seen < t_.spike_min_history)
    return value > highest + SeriesReport::kShortWindowRise * std::abs(highest);
  return value > highest;
}

void SeriesTracker::add_loss(int64_t step, double value) {
  SeriesReport& r = r_;
  if (r.loss_steps == 0) {
    r.first_loss_step = step;
    r.first_loss = value;
  }
  ++r.loss_steps;
  r.last_loss_step = step;
  r.last_loss = value;
  if (!std::isfinite(value)) {
    if (r.first_nonfinite_loss < 0) r.first_nonfinite_loss = step;
    if (!r.diverged()) {
      // A pending departure that had not yet lasted ends here, in NaN: it began at its onset.
      r.divergence_nonfinite = true;
      if (pending_.onset >= 0)
        confirm_divergence(pending_.onset, pending_.value, pending_.level);
      else
        confirm_divergence(step, value, window_max_.size() > 0 ? window_max_.max() : SeriesReport::kNone);
    }
    r.divergence_last = value;
    return;  // the band and the window keep finite losses only
  }
  if (std::fabs(value) > std::numeric_limits<float>::max()) {  // LOSS_OUT_OF_RANGE: not a loss to band
    if (r.out_of_range_losses++ == 0) {
      r.first_out_of_range_step = step;
      r.first_out_of_range_loss = value;
    }
    return;
  }
  ++finite_losses_;
  if (early_losses_.size() < static_cast<std::size_t>(SeriesReport::kEarlyLosses)) early_losses_.push_back(value);
  late_losses_.push_back(value);
  if (late_losses_.size() > static_cast<std::size_t>(SeriesReport::kLateLosses)) late_losses_.pop_front();
  if (std::isnan(r.min_loss) || value < r.min_loss) {
    r.min_loss = value;
    r.min_loss_step = step;
  }
  if (r.diverged()) {
    r.divergence_last = value;
    if (r.divergence_back < 0 && step > r.divergence_step && !(value > r.divergence_level)) r.divergence_back = step;
  }

  // DIVERGENCE: above the window's highest loss, for divergence_steps losses in a row.
  if (!r.diverged()) {
    if (pending_.onset >= 0) {
      if (value > pending_.level) {
        if (++pending_.run >= t_.divergence_steps) {
          confirm_divergence(pending_.onset, pending_.value, pending_.level);
          r.divergence_last = value;
        }
      } else {
        pending_ = {};
      }
    } else if (window_max_.size() > 0 && departs(value, window_max_.max(), window_max_.size())) {
      pending_ = {step, window_max_.max(), value, 1, 0};
      if (t_.divergence_steps <= 1) {
        confirm_divergence(step, value, pending_.level);
        r.divergence_last = value;
      }
    }
  }

  // LOSS_SPIKE, not counted once the run has diverged (every later loss is out of the band).
  if (!r.diverged()) {
    if (const auto spike = test_spike(band_, early_max_, step, value, t_)) {
      ++r.spike_count;
      if (pending_.onset >= 0) ++pending_.spikes;
      if (r.spikes.size() < SeriesReport::kListed) {
        r.spikes.push_back(*spike);
        if (last_batch_step_ == step) r.spikes.back().batch = last_batch_;
      }
    }
  }

  band_.push(value);
  if (loss_index_ < t_.spike_early_steps) early_max_ = std::max(early_max_, value);
  window_max_.push(value);
  ++loss_index_;
}

void SeriesTracker::confirm_divergence(int64_t onset, double value, double level) {
  SeriesReport& r = r_;
  r.divergence_step = onset;
  r.divergence_value = value;
  r.divergence_level = level;
  r.divergence_last = value;
  // Spikes from the onset on are the divergence, not spikes apart: every one counted since the
  // onset leaves the count, the listed ones the list.
  if (pending_.onset == onset) r.spike_count -= pending_.spikes;
  while (!r.spikes.empty() && r.spikes.back().step >= onset) r.spikes.pop_back();
  pending_ = {};
}

void SeriesTracker::add_norm(int64_t step, double value) {
  SeriesReport& r = r_;
  ++r.grad_norm_steps;
  last_norm_ = value;
  // The largest, +Inf included (at its first step); NaN is no size.
  if (!std::isnan(value) && (std::isnan(r.grad_norm_max) || value > r.grad_norm_max)) {
    r.grad_norm_max = value;
    r.grad_norm_max_step = step;
  }
  if (std::isfinite(value)) norms_.emplace_back(step, value);
}

void SeriesTracker::add_clipped(int64_t step, double value) {
  SeriesReport& r = r_;
  // The norm before clipping comes first at a step; an applied norm without it says nothing.
  if (last_norm_step_ != step) return;
  ++r.clip_known_steps;
  // Clipping scales by max_norm / (norm + 1e-6): a relative cut below 1e-6 is no clipping.
  if (std::isfinite(last_norm_) && value < last_norm_ * (1 - 1e-6)) ++r.clipped_steps;
  if (!std::isfinite(last_norm_) && std::isfinite(value)) ++r.clipped_steps;
}

void SeriesTracker::add_batch(int64_t step, double value) {
  last_batch_ = value;
  // The batch may come after its step's loss.
  if (!r_.spikes.empty() && r_.spikes.back().step == step) r_.spikes.back().batch = value;
}

SeriesReport SeriesTracker::finish() const {
  SeriesReport r = r_;
  // Nearest rank: the smallest value with at least q of the values at or below it.
  auto quantile = [](std::vector<double>& v, double q) {
    const std::size_t k = static_cast<std::size_t>(std::ceil(q * static_cast<double>(v.size()))) - 1;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
  };
  if (!norms_.empty()) {
    std::vector<double> v;
    v.reserve(norms_.size());
    for (const auto& [step, value] : norms_) v.push_back(value);
    r.grad_norm_median = quantile(v, 0.5);
    r.grad_norm_p99 = quantile(v, 0.99);
  }
  if (finite_losses_ >= SeriesReport::kEarlyLosses + SeriesReport::kLateLosses) {
    const int k = SeriesReport::kLevelLosses;
    double lowest = INFINITY;
    for (std::size_t i = 0; i + k <= early_losses_.size(); ++i)
      lowest = std::min(lowest, std::accumulate(early_losses_.begin() + static_cast<std::ptrdiff_t>(i),
                                                early_losses_.begin() + static_cast<std::ptrdiff_t>(i) + k, 0.0) / k);
    r.early_loss_level = lowest;
    r.late_loss_mean = std::accumulate(late_losses_.begin(), late_losses_.end(), 0.0) / SeriesReport::kLateLosses;
  }
  if (r.onset() >= 0) {
    std::vector<double> before;
    for (const auto& [step, value] : norms_)
      if (step < r.onset()) before.push_back(value);
    r.grad_norm_steps_before = static_cast<int64_t>(before.size());
    if (!before.empty()) {
      r.grad_norm_max_before = *std::max_element(before.begin(), before.end());
      r.grad_norm_median_before = quantile(before, 0.5);
    }
  }
  return r;
}

}  // namespace gradscope
