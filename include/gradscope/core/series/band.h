// RecentBand: the recent values of one per-step series (the loss, a gradient norm) as a band,
// mean and standard deviation of the last `window` values, against which the next value is a
// spike or not (OLMo-core's stability monitor: a value above the mean + 6 sigma of the last 128
// values is a spike). O(1) a value kept, O(window) a test; memory is the window. Exact and
// finite for any finite values (scaled two-pass sums), however far apart.
//
//   gradscope::RecentBand band(128);
//   for (double loss : losses) {
//     gradscope::BandTest t = band.test(loss, /*sigma=*/6, /*min_history=*/16);
//     if (t.above) report(t.z);
//     band.push(loss);
//   }
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <utility>
#include <vector>

namespace gradscope {

/// How a value stands against the band of the values before it.
struct BandTest {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  int64_t history = 0;  ///< values in the band; the test needs min_history of them
  double mean = kNone;
  double sd = kNone;    ///< population standard deviation of the band (before the floor)
  double z = kNone;     ///< (value - mean) / max(sd, floor); NaN without enough history
  bool above = false;   ///< history >= min_history and value > mean + sigma x max(sd, floor)
};

class RecentBand {
 public:
  /// `window` >= 2 values are kept.
  explicit RecentBand(int64_t window = 128);

  /// Tests `value` against the values pushed so far (not itself). A band whose standard
  /// deviation is below `relative_floor` x |mean| is widened to that, so float rounding on a
  /// flat series is not a spike. A non-finite value is never `above` (it is its own finding).
  BandTest test(double value, double sigma, int64_t min_history, double relative_floor = 1e-3) const;
  /// Adds a finite value (non-finite ones are ignored: they would poison the band).
  void push(double value);

  int64_t size() const { return count_; }

 private:
  std::vector<double> ring_;  // the last count_ values, the next one written at next_
  int64_t next_ = 0, count_ = 0;
};

/// The largest of the last `window` values pushed, in O(1) amortised per value (a monotone
/// queue). -inf before any value; non-finite values are not kept.
class RecentMax {
 public:
  explicit RecentMax(int64_t window = 128) : window_(window) {}
  void push(double value);
  double max() const { return queue_.empty() ? -std::numeric_limits<double>::infinity() : queue_.front().second; }
  int64_t size() const { return std::min(pushed_, window_); }

 private:
  int64_t window_;
  int64_t pushed_ = 0;
  std::deque<std::pair<int64_t, double>> queue_;  // (index, value), values decreasing
};

}  // namespace gradscope
