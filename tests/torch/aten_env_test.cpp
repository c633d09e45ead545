// GRADSCOPE_FORCE_ATEN_STATS forces the ATen path from the start (ctest sets it for this
// program only, see CMakeLists.txt).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "aten_stats.h"  // src/torch, internal

TEST(AtenStatsEnvironment, TheVariableForcesTheAtenPathForCpuTensors) {
  ASSERT_NE(std::getenv("GRADSCOPE_FORCE_ATEN_STATS"), nullptr) << "run through ctest, which sets it";
  EXPECT_TRUE(gradscope::torch::internal::aten_stats_forced());
  EXPECT_TRUE(gradscope::torch::internal::use_aten_stats(at::zeros({2})));
}
