// scaled_thresholds / unscaled: a scaled tensor's summary brought back to the tensor's units.
#include "gradscope/core/stats/scaled.h"

namespace gradscope {

StatsOptions scaled_thresholds(StatsOptions options, double factor) {
  options.dead_eps *= factor;
  options.saturation *= factor;
  return options;
}

Stats unscaled(Stats s, double factor) {
  if (factor == 1.0) return s;
  s.sum /= factor;
  s.sum_sq /= factor * factor;
  s.sum_abs /= factor;
  s.min /= factor;  // +-Inf (no finite value) stays so
  s.max /= factor;
  s.max_abs /= factor;
  return s;
}

}  // namespace gradscope
