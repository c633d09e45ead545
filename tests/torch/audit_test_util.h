// What the audit tests share: the small seeded MLP they audit, a filter over records and a
// node's report.
#pragma once

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <string>
#include <vector>

#include <stdexcept>

#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/audit/report.h"

namespace gradscope::torch::audit_test {

/// fc1 (6 -> 8), act1 (ReLU), fc2 (8 -> 3), initialised from seed 0.
inline ::torch::nn::Sequential mlp() {
  namespace nn = ::torch::nn;
  ::torch::manual_seed(0);
  return nn::Sequential({{"fc1", nn::Linear(6, 8)}, {"act1", nn::ReLU()}, {"fc2", nn::Linear(8, 3)}});
}

/// The records of `node` at `site`, in order.
inline std::vector<Record> of(const std::vector<Record>& rs, const std::string& node, Site site) {
  std::vector<Record> out;
  for (const Record& r : rs)
    if (r.node == node && r.site == site) out.push_back(r);
  return out;
}

/// The report of node `id`; throws std::runtime_error when the report has none.
inline const NodeReport& node_of(const Report& r, const std::string& id) {
  for (const NodeReport& n : r.nodes)
    if (n.node == id) return n;
  throw std::runtime_error("no node " + id);
}

}  // namespace gradscope::torch::audit_test
