// AttentionHistory: the attention records of a run kept for drawing, in bounded memory. Per
// node at most `max_steps` samples, evenly spread: once a node holds twice that, every other
// one goes and only every other later one is kept (a run of a million steps draws as well as a
// short one, in the same memory).
//
//   gradscope::AttentionHistory h(400);
//   reader.for_each(visitor_that_calls(h.add));
//   for (const AttentionRecord& r : h.records()) ...   // node by node, steps increasing
#pragma once

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "gradscope/core/attention/rules.h"
#include "gradscope/core/series/thinned.h"

namespace gradscope {

class AttentionHistory {
 public:
  explicit AttentionHistory(std::size_t max_steps);
  /// Records of a node arrive in increasing steps.
  void add(const AttentionRecord& record);
  /// The kept records, the nodes in the order they first came.
  std::vector<AttentionRecord> records() const;

 private:
  std::size_t max_steps_;
  std::vector<std::string> order_;
  std::unordered_map<std::string, ThinnedList<AttentionRecord>> nodes_;
};

}  // namespace gradscope
