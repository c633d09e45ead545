// The audit's update pass that also carries the next step: in one read of the parameter after
// the optimizer's step and of its snapshot from before it, the statistics of the update (after -
// before) and of the new value, and the snapshot overwritten with the new value. When nothing
// touches the parameter before the next audited step (its version counter says so), that step
// reuses both instead of reading the parameter again (docs/benchmarks.md, issue 31).
//
//   gradscope::CarriedUpdate c = gradscope::compute_update_and_carry(after_view, snapshot_ptr);
#pragma once

#include "gradscope/core/stats/stats.h"

namespace gradscope {

struct CarriedUpdate {
  Stats update;  ///< of after - before, as compute_difference gives it
  Stats value;   ///< of after, as compute gives it
};

/// float32 contiguous `after` only (other dtypes: compute_difference and compute). `before`:
/// view.numel() floats, overwritten with `after`. Blocks of 2,048 elements in L1.
CarriedUpdate compute_update_and_carry(const TensorView& after, float* before, const StatsOptions& options = {});

}  // namespace gradscope
