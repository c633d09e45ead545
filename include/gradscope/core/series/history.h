// ScalarHistory: the per-step scalars of a run kept for drawing, in bounded memory. Per series
// at most 2 x `max_steps` values, evenly spread: once a series holds twice that, every other
// one goes and only every other later one is kept (AttentionHistory's scheme). A spike dropped
// by the thinning is still drawn: the charts mark the report's spikes from the report.
//
//   gradscope::ScalarHistory h(400);
//   reader.for_each(visitor_that_calls(h.add));
//   for (const gradscope::StepScalar& x : h.values()) ...   // series by series, steps increasing
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "gradscope/core/series/rules.h"
#include "gradscope/core/series/thinned.h"

namespace gradscope {

class ScalarHistory {
 public:
  explicit ScalarHistory(std::size_t max_steps);
  /// Values of a series arrive in increasing steps.
  void add(const StepScalar& value);
  /// The kept values, the series in the order they first came.
  std::vector<StepScalar> values() const;

 private:
  std::size_t max_steps_;
  std::vector<std::string> order_;
  std::unordered_map<std::string, ThinnedList<StepScalar>> series_;
};

}  // namespace gradscope
