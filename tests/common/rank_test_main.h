// main() of a test program whose tests start rank workers of itself (ranks.h): run as a worker
// it runs `worker(scenario, rank, world, dir)` and exits with its code, otherwise the tests.
//
//   int main(int argc, char** argv) { return gradscope::test::rank_test_main(argc, argv, run_worker); }
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ranks.h"

namespace gradscope::test {

template <class Worker>
int rank_test_main(int argc, char** argv, Worker worker) {
  if (argc >= 6 && std::string(argv[1]) == kRankWorker) return worker(argv[2], std::stoi(argv[3]), std::stoi(argv[4]), argv[5]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

}  // namespace gradscope::test
