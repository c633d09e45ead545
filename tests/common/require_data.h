// Tests that train on real data (scripts/fetch-data.sh) or read the tree fixtures: without the
// file the test fails, naming it and what writes it. No test skips: on a machine set up by the
// README everything is there, and a skipped test is a failed promise (`make test` fails on any).
//
//   TEST(Demo, Flags) {
//     GRADSCOPE_REQUIRE_DATA(data_dir() + "/digits.csv");
//     ...
//   }
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

/// Fails the test, naming `path` and `make data`, when `path` is missing.
#define GRADSCOPE_REQUIRE_DATA(path)                                                           \
  do {                                                                                         \
    const std::string gradscope_required_(path);                                               \
    if (!std::filesystem::exists(gradscope_required_))                                         \
      FAIL() << gradscope_required_                                                            \
             << " is missing: `make data` (scripts/fetch-data.sh) writes the data sets; the "  \
                "tree fixtures are in the repository (tests/data/trees)";                      \
  } while (0)
