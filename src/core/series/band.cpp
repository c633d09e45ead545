#include "gradscope/core/series/band.h"

#include <algorithm>
#include <cmath>

#include "gradscope/core/error.h"

namespace gradscope {

RecentBand::RecentBand(int64_t window) {
  if (window < 2) throw Error("recent band: window must be >= 2, got " + std::to_string(window));
  ring_.assign(static_cast<std::size_t>(window), 0.0);
}

BandTest RecentBand::test(double value, double sigma, int64_t min_history, double relative_floor) const {
  BandTest t;
  t.history = count_;
  if (count_ == 0) return t;
  const double n = static_cast<double>(count_);
  const double shifted_mean = sum_ / n;
  t.mean = origin_ + shifted_mean;
  t.sd = std::sqrt(std::max(0.0, sum_sq_ / n - shifted_mean * shifted_mean));
  if (count_ < min_history || !std::isfinite(value)) return t;
  const double width = std::max(t.sd, relative_floor * std::fabs(t.mean));
  if (width > 0) {
    t.z = (value - t.mean) / width;
    t.above = value > t.mean + sigma * width;
  } else {  // a band of zeros: any rise is above it
    t.z = value > t.mean ? std::numeric_limits<double>::infinity() : 0.0;
    t.above = value > t.mean;
  }
  return t;
}

void RecentBand::push(double value) {
  if (!std::isfinite(value)) return;
  const int64_t window = static_cast<int64_t>(ring_.size());
  if (count_ == 0) origin_ = value;
  if (count_ == window) {
    const double old = ring_[static_cast<std::size_t>(next_)] - origin_;
    sum_ -= old;
    sum_sq_ -= old * old;
  } else {
    ++count_;
  }
  ring_[static_cast<std::size_t>(next_)] = value;
  const double d = value - origin_;
  sum_ += d;
  sum_sq_ += d * d;
  next_ = (next_ + 1) % window;
  if (++since_resum_ >= window) resum();
}

void RecentMax::push(double value) {
  if (!std::isfinite(value)) return;
  while (!queue_.empty() && queue_.back().second <= value) queue_.pop_back();
  queue_.emplace_back(pushed_, value);
  ++pushed_;
  while (queue_.front().first <= pushed_ - 1 - window_) queue_.pop_front();
}

void RecentBand::resum() {
  // Re-centre on the newest value and add the window up again: amortised O(1) per push.
  const int64_t window = static_cast<int64_t>(ring_.size());
  origin_ = ring_[static_cast<std::size_t>((next_ + window - 1) % window)];
  sum_ = sum_sq_ = 0;
  for (int64_t i = 0; i < count_; ++i) {
    const double d = ring_[static_cast<std::size_t>((next_ + window - 1 - i) % window)] - origin_;
    sum_ += d;
    sum_sq_ += d * d;
  }
  since_resum_ = 0;
}

}  // namespace gradscope
