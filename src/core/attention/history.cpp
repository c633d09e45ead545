#include "gradscope/core/attention/history.h"

#include <algorithm>

namespace gradscope {

AttentionHistory::AttentionHistory(std::size_t max_steps) : max_steps_(std::max<std::size_t>(max_steps, 1)) {}

void AttentionHistory::add(const AttentionRecord& record) {
  auto [it, fresh] = nodes_.try_emplace(record.node);
  if (fresh) order_.push_back(record.node);
  it->second.add(record, max_steps_);
}

std::vector<AttentionRecord> AttentionHistory::records() const {
  std::vector<AttentionRecord> out;
  for (const std::string& node : order_) {
    const std::vector<AttentionRecord>& kept = nodes_.at(node).kept();
    out.insert(out.end(), kept.begin(), kept.end());
  }
  return out;
}

}  // namespace gradscope
