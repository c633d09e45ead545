// A Stats summary with a chosen L2 norm, for tests of rules and renderers that need no data.
#pragma once

#include <cstdint>

#include "gradscope/core/stats/stats.h"

namespace gradscope::test {

/// `count` finite values with L2 exactly `l2` (sqrt(fl(x*x)) == x for IEEE doubles without
/// over/underflow), mean |x| = l2 / count, min 0, max |x| = l2, and the given numbers of
/// zero and saturated elements.
inline Stats with_l2(double l2, int64_t count = 100, int64_t zeros = 0, int64_t saturated = 0) {
  Stats s;
  s.count = s.finite = count;
  s.zero = zeros;
  s.saturated = saturated;
  s.sum_sq = l2 * l2;
  s.sum = s.sum_abs = l2;
  s.min = 0;
  s.max = s.max_abs = l2;
  return s;
}

}  // namespace gradscope::test
