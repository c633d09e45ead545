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
  // Two passes over the window, each value scaled by a power of two near the largest magnitude
  // (exact), so neither the sum nor the squares overflow for any finite values (a loss of
  // -1e200 among losses near 2 made running sums of squares infinite, and the band's sd 0).
  // O(window) a test: one a step for the loss, and a gradient norm's band only once its spike
  // rule has fired.
  const std::size_t n = static_cast<std::size_t>(count_);
  double largest = 0;
  for (std::size_t i = 0; i < n; ++i) largest = std::max(largest, std::fabs(ring_[i]));
  const int exponent = largest > 0 ? std::ilogb(largest) : 0;
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += std::scalbn(ring_[i], -exponent);
  const double scaled_mean = sum / static_cast<double>(n);
  double squares = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double d = std::scalbn(ring_[i], -exponent) - scaled_mean;
    squares += d * d;
  }
  t.mean = std::scalbn(scaled_mean, exponent);
  t.sd = std::scalbn(std::sqrt(squares / static_cast<double>(n)), exponent);
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
  ring_[static_cast<std::size_t>(next_)] = value;
  next_ = (next_ + 1) % window;
  count_ = std::min(count_ + 1, window);
}

void RecentMax::push(double value) {
  if (!std::isfinite(value)) return;
  while (!queue_.empty() && queue_.back().second <= value) queue_.pop_back();
  queue_.emplace_back(pushed_, value);
  ++pushed_;
  while (queue_.front().first <= pushed_ - 1 - window_) queue_.pop_front();
}

}  // namespace gradscope
