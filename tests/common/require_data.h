// Tests that train on real data (scripts/fetch-data.sh): without the file they skip on a
// developer's machine, and fail in CI, where a skipped test is a failed promise.
//
//   TEST(Demo, Flags) {
//     GRADSCOPE_REQUIRE_DATA(data_dir() + "/digits.csv");
//     ...
//   }
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace gradscope::test {

/// True when the CI environment variable is set to anything but "", "0" or "false".
inline bool in_ci() {
  const char* ci = std::getenv("CI");
  if (ci == nullptr) return false;
  const std::string v = ci;
  return !v.empty() && v != "0" && v != "false";
}

}  // namespace gradscope::test

/// Skips the test when `path` is missing, or fails it when running in CI.
#define GRADSCOPE_REQUIRE_DATA(path)                                                           \
  do {                                                                                         \
    const std::string gradscope_required_(path);                                               \
    if (!std::filesystem::exists(gradscope_required_)) {                                       \
      if (::gradscope::test::in_ci())                                                          \
        FAIL() << gradscope_required_ << " is missing under CI; run scripts/fetch-data.sh";    \
      GTEST_SKIP() << gradscope_required_ << " missing (run scripts/fetch-data.sh)";           \
    }                                                                                          \
  } while (0)
