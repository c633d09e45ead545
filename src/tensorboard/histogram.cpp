#include "gradscope/tensorboard/histogram.h"

#include <algorithm>
#include <cfloat>
#include <cmath>

#include "gradscope/core/audit/element_histogram.h"

namespace gradscope::tensorboard {
namespace {

// histogram.cc's EncodeToProto(preserve_zero_buckets = false): a run of empty buckets becomes
// one, ending at the run's last limit, so a histogram of a few values stays small.
void encode_buckets(const std::vector<double>& counts, Histogram& h) {
  const std::vector<double>& limits = default_bucket_limits();
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
}

}  // namespace

const std::vector<double>& default_bucket_limits() { return histogram_bucket_limits(); }

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
    counts[histogram_bucket(v)] += 1;  // [limits[i-1], limits[i])
    h.min = std::min(h.min, v);
    h.max = std::max(h.max, v);
    h.num += 1;
    h.sum += v;
    h.sum_squares += v * v;
  }
  if (skipped) *skipped = nonfinite;
  if (h.num == 0) h.min = h.max = 0;
  encode_buckets(counts, h);
  return h;
}

Histogram histogram_of(const ElementHistogram& elements) {
  std::vector<double> counts(default_bucket_limits().size(), 0.0);
  for (const auto& [index, count] : elements.buckets)
    if (index < counts.size()) counts[index] += static_cast<double>(count);
  Histogram h;
  h.min = elements.min;
  h.max = elements.max;
  h.num = static_cast<double>(elements.num);
  h.sum = elements.sum;
  h.sum_squares = elements.sum_squares;
  encode_buckets(counts, h);
  return h;
}

}  // namespace gradscope::tensorboard
