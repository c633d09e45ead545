// Element histograms: how many of a tensor's elements fall in each of TensorBoard's default
// buckets, counted by the audit at sampled steps (AuditOptions::histogram_every) and handed on
// in StepRecords, so a run store and TensorBoard get histograms of the elements themselves, not
// only of per-channel summaries.
//
//   gradscope::HistogramCounter counter;                 // one per tensor, reused
//   counter.add(data, n);                                // float or double, one pass
//   gradscope::ElementHistogram h = counter.take(step, "fc1", gradscope::Site::kActivation);
//   // h.buckets: (index into histogram_bucket_limits(), count), only non-empty buckets
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/vocabulary/record.h"

namespace gradscope {

/// TensorBoard's default bucket limits, ascending: +-1e-12 x 1.1^k below 1e20, +-DBL_MAX, and
/// 0 (TensorFlow's histogram.cc, InitDefaultBucketsInner). Bucket i holds [limits[i-1],
/// limits[i]).
const std::vector<double>& histogram_bucket_limits();

/// The bucket of a finite `v`: the index of the first limit above it (the last bucket for
/// DBL_MAX). Equal to upper_bound over histogram_bucket_limits(), in one table read (keyed by
/// the exponent and top mantissa bits) and one comparison.
std::size_t histogram_bucket(double v);

/// One tensor's elements at one step, in the default buckets.
struct ElementHistogram {
  int64_t step = 0;
  std::string node;
  Site site = Site::kActivation;  ///< kActivation, kOutputGrad or kParamGrad
  uint64_t num = 0;               ///< finite elements, the ones in buckets
  uint64_t nonfinite = 0;         ///< NaN and +-Inf elements: TensorBoard has no bucket for them
  double min = 0, max = 0;        ///< over the finite elements (0 when there are none)
  double sum = 0, sum_squares = 0;
  /// (bucket index, count) of the non-empty buckets, ascending; the counts add up to num.
  std::vector<std::pair<uint32_t, uint64_t>> buckets;
};

/// Adds `b`'s counts to `a` (same node and site: e.g. the gradients of a node's parameters).
void merge_into(ElementHistogram& a, const ElementHistogram& b);

/// Counts elements into the default buckets. Holds one counter per bucket (12 KB); the bucket
/// table all counters share takes 64 KB.
class HistogramCounter {
 public:
  HistogramCounter();
  void add(const float* data, std::size_t n);
  void add(const double* data, std::size_t n);
  /// The histogram of everything added since the last take; the counter starts again empty.
  ElementHistogram take(int64_t step, std::string node, Site site);

 private:
  std::vector<uint64_t> counts_;
  uint64_t num_ = 0, nonfinite_ = 0;
  double min_, max_, sum_ = 0, sum_squares_ = 0;
};

}  // namespace gradscope
