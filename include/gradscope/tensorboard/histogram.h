// Histogram: TensorBoard's HistogramProto as plain data, filled the way TensorFlow's
// histogram.cc fills it: its default exponential buckets (limits +-1e-12 x 1.1^k up to 1e20,
// then +-DBL_MAX, and 0), runs of empty buckets collapsed into one.
//
//   std::vector<double> per_channel_means = ...;
//   gradscope::tensorboard::Histogram h = gradscope::tensorboard::histogram_of(per_channel_means);
//   summary.histogram("channel_activation_mean/fc1", h);   // event_writer.h
#pragma once

#include <vector>

#include "gradscope/core/audit/element_histogram.h"

namespace gradscope::tensorboard {

/// Counts of values in buckets; bucket i holds values in [limits[i-1], limits[i]) (bucket 0
/// from -DBL_MAX). num, sum and sum_squares cover the values counted.
struct Histogram {
  double min = 0, max = 0, num = 0, sum = 0, sum_squares = 0;
  std::vector<double> limits;
  std::vector<double> counts;
};

/// The default bucket limits of TensorFlow's histogram.cc, ascending (1,551 of them;
/// histogram_bucket_limits() of core).
const std::vector<double>& default_bucket_limits();

/// Histogram of the finite `values` in the default buckets. NaN and +-Inf have no bucket in
/// TensorBoard's format, so they are left out; `skipped` (if given) gets how many were.
Histogram histogram_of(const std::vector<double>& values, long* skipped = nullptr);

/// The HistogramProto of an element histogram the audit counted (its NaN and +-Inf elements
/// are already left out, in elements.nonfinite).
Histogram histogram_of(const ElementHistogram& elements);

}  // namespace gradscope::tensorboard
