// What the audit tests share: the small seeded MLP they audit and a filter over records.
#pragma once

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include <string>
#include <vector>

#include "gradscope/core/audit/record.h"

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

}  // namespace gradscope::torch::audit_test
