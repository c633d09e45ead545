// The digits scenarios as GoogleTest parameters: every scenario of all_scenarios(), so a new
// scenario is tested by every parameterised suite without editing a list in each.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "scenario.h"

namespace gradscope::scenarios {

inline std::vector<std::string> scenario_names() {
  std::vector<std::string> names;
  for (const Scenario& s : all_scenarios()) names.push_back(s.name);
  return names;
}

/// "healthy-mlp" -> "healthy_mlp": GoogleTest names allow no '-'.
inline std::string scenario_test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
}

}  // namespace gradscope::scenarios
