#include "gradscope/tensorboard/histogram.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

namespace gradscope::tensorboard {

const std::vector<double>& default_bucket_limits() {
  // TensorFlow's Histogram::InitDefaultBuckets: a 10% ratio between limits keeps every
  // bucket's relative width the same from 1e-12 to 1e20, so one layout serves any scale.
  static const std::vector<double> limits = [] {
    std::vector<double> pos;
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) pos.push_back(v);
    pos.push_back(DBL_MAX);
    std::vector<double> all;
    all.reserve(2 * pos.size() + 1);
    for (auto it = pos.rbegin(); it != pos.rend(); ++it) all.push_back(-*it);
    all.push_back(0.0);
    all.insert(all.end(), pos.begin(), pos.end());
    return all;
  }();
  return limits;
}

Histogram histogram_of(const std::vector<double>& values, long* skipped) {
  const std::vector<double>& limits = default_bucket_limits();
  std::vector<double> counts(limits.size(), 0.0);
  Histogram h;
  h.min = DBL_MAX;
  h.max = -DBL_MAX;
  long nonfinite = 0;
  for (double v : values) {
    if (!std::isfinite(v)) {
      ++nonfinite;
      continue;
    }
    // The bucket whose limit is the first one above v: [limits[i-1], limits[i]).
    const std::size_t i = static_cast<std::size_t>(
        std::upper_bound(limits.begin(), limits.end(), v) - limits.begin());
    counts[std::min(i, limits.size() - 1)] += 1;
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.num += 1;
    h.sum += v;
    h.sum_squares += v * v;
  }
  if (skipped) *skipped = nonfinite;
  if (h.num == 0) h.min = h.max = 0;
  // histogram.cc's EncodeToProto(preserve_zero_buckets = false): a run of empty buckets
  // becomes one, ending at the run's last limit, so a histogram of a few values stays small.
  for (std::size_t i = 0; i < counts.size();) {
    double end = limits[i];
    double count = counts[i];
    ++i;
    if (count <= 0.0) {
      while (i < counts.size() && counts[i] <= 0.0) {
        end = limits[i];
        count = counts[i];
        ++i;
      }
    }
    h.limits.push_back(end);
    h.counts.push_back(count);
  }
  return h;
}

}  // namespace gradscope::tensorboard
