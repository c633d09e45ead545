#include "gradscope/core/attention/history.h"

#include <algorithm>

namespace gradscope {

AttentionHistory::AttentionHistory(std::size_t max_steps) : max_steps_(std::max<std::size_t>(max_steps, 1)) {}

void AttentionHistory::add(const AttentionRecord& record) {
  auto [it, fresh] = nodes_.try_emplace(record.node);
  if (fresh) order_.push_back(record.node);
  Node& n = it->second;
  // Sample i is kept when i is a multiple of the stride: after a halving the kept ones are
  // still samples 0, stride, 2 stride, ...
  if (n.seen++ % n.stride != 0) return;
  n.kept.push_back(record);
  if (n.kept.size() < 2 * max_steps_) return;
  std::size_t w = 0;
  for (std::size_t r = 0; r < n.kept.size(); r += 2, ++w)
    if (w != r) n.kept[w] = std::move(n.kept[r]);
  n.kept.resize(w);
  n.stride *= 2;
}

std::vector<AttentionRecord> AttentionHistory::records() const {
  std::vector<AttentionRecord> out;
  for (const std::string& node : order_) {
    const Node& n = nodes_.at(node);
    out.insert(out.end(), n.kept.begin(), n.kept.end());
  }
  return out;
}

}  // namespace gradscope
