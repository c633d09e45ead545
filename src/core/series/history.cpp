#include "gradscope/core/series/history.h"

#include <algorithm>

namespace gradscope {

ScalarHistory::ScalarHistory(std::size_t max_steps) : max_steps_(std::max<std::size_t>(max_steps, 1)) {}

void ScalarHistory::add(const StepScalar& value) {
  auto [it, fresh] = series_.try_emplace(value.name);
  if (fresh) order_.push_back(value.name);
  it->second.add(value, max_steps_);
}

std::vector<StepScalar> ScalarHistory::values() const {
  std::vector<StepScalar> out;
  for (const std::string& name : order_) {
    const std::vector<StepScalar>& kept = series_.at(name).kept();
    out.insert(out.end(), kept.begin(), kept.end());
  }
  return out;
}

}  // namespace gradscope
