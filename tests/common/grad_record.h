// A parameter-gradient record of one value whose L2 is `l2`: what the series and depth rules
// read from a node at a step.
#pragma once

#include <cstdint>
#include <string>

#include "gradscope/core/vocabulary/record.h"

namespace gradscope::test {

inline Record grad_record(int64_t step, const std::string& node, double l2) {
  Record r{step, node, Site::kParamGrad, {}};
  r.stats.count = r.stats.finite = 1;
  r.stats.sum_sq = l2 * l2;
  r.stats.sum = l2;
  r.stats.sum_abs = l2;
  r.stats.max_abs = l2;
  r.stats.min = r.stats.max = l2;
  return r;
}

}  // namespace gradscope::test
