// Golden-file comparison for the renderer tests. GRADSCOPE_UPDATE_GOLDEN=1 rewrites the files.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

namespace gradscope::test {

inline std::string golden_path(const std::string& name) { return std::string(GRADSCOPE_GOLDEN_DIR) + "/" + name; }

inline void expect_golden(const std::string& name, const std::string& actual) {
  if (std::getenv("GRADSCOPE_UPDATE_GOLDEN")) {
    std::ofstream(golden_path(name), std::ios::binary) << actual;
    return;
  }
  std::ifstream in(golden_path(name), std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << golden_path(name);
  std::stringstream expected;
  expected << in.rdbuf();
  EXPECT_EQ(actual, expected.str()) << "golden file " << name << " differs";
}

}  // namespace gradscope::test
