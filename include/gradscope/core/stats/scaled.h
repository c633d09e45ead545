// Statistics of a tensor that carries a known factor, such as a gradient of a loss multiplied
// by a loss scale for mixed precision: measure the scaled tensor with its thresholds scaled by
// the same factor, then divide the summary.
//
//   const gradscope::StatsOptions o = gradscope::scaled_thresholds(options, 65536);
//   gradscope::Stats g = gradscope::unscaled(gradscope::compute(view, o), 65536);
//
// The result equals the summary of the tensor divided by the factor: bit for bit when the
// factor is a power of two (dividing a double by one is exact, and so is |x| <= eps * 2^k
// against |x / 2^k| <= eps), which GradScaler's scales are; within rounding otherwise.
#pragma once

#include "gradscope/core/stats/stats.h"

namespace gradscope {

/// `options` with dead_eps and saturation multiplied by `factor` (> 0).
StatsOptions scaled_thresholds(StatsOptions options, double factor);

/// `s` of a tensor x, as the summary of x / factor (> 0): sums, extremes and max |x| divided,
/// counts unchanged (they were counted against scaled_thresholds).
Stats unscaled(Stats s, double factor);

}  // namespace gradscope
