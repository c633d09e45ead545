// Compression profiles for tests: Linear nodes by shape, and a two-node chain.
#pragma once

#include <string>
#include <vector>

#include "gradscope/core/compress/recipe.h"

namespace gradscope::test {

/// A Linear node of `units` x `inputs` with a bias; no statistics.
inline compress::NodeProfile linear_node(const std::string& name, int64_t units, int64_t inputs) {
  compress::NodeProfile p;
  p.node = name;
  p.weight_shape = {units, inputs};
  p.bias = units;
  return p;
}

/// fc1 (units1 x inputs) feeding fc2 (units2 x units1), fan 1.
inline std::vector<compress::NodeProfile> linear_chain(int64_t inputs, int64_t units1, int64_t units2) {
  std::vector<compress::NodeProfile> p = {linear_node("fc1", units1, inputs), linear_node("fc2", units2, units1)};
  p[0].next = "fc2";
  p[0].next_fan = 1;
  return p;
}

}  // namespace gradscope::test
