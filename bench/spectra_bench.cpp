// make bench-spectra: what merging effective ranks and CKA exactly across ranks costs at a
// sampled step (SpectraMerge::merge: three allgathers and the combination), at 2 and 4 ranks
// (Gloo on loopback), against one all-reduce of 3.2M float gradients (the bench-audit MLP's),
// each timed from a barrier. Cases, 64 samples a rank: the effective rank of a 1024-channel
// activation (rows route: 64 x 1024 doubles), of a [64, 64, 8, 8] conv activation (Gram route:
// 64 x 64), a leakage pair of two 1024-wide layers (rows), a CKA of two 64x8x8 conv features
// flattened (rows, 4096 + 4096 features), and all four together. Medians over BENCH_STEPS (30).
// Last line: {"bench":"spectra","all_share_2":X,"all_share_4":Y} (merge time / all-reduce time).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../tests/common/ranks.h"
#include "distributed/spectra.h"

namespace {

using Clock = std::chrono::steady_clock;
const char* const kCases[] = {"effective rank, 1024 channels", "effective rank, conv 64 ch x 8x8", "CKA, 1024 vs 1024 features",
                              "CKA, conv 4096 vs 4096 features", "all four"};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void register_case(gradscope::torch::internal::SpectraMerge& m, gradscope::StepRecords& step, int which) {
  step.channels.clear();
  step.similarities.clear();
  const auto cka = [&](int64_t features) {
    step.similarities.push_back({step.step, "a" + std::to_string(features), "b", 0});
    m.add_similarity({step.similarities.size() - 1}, at::randn({64, features}), at::randn({64, features}));
  };
  if (which == 0 || which == 4) {
    step.channels.push_back({step.step, "fc", {}, {}, 0});
    m.add_rank("fc", at::randn({64, 1024}), 1);
  }
  if (which == 1 || which == 4) {
    step.channels.push_back({step.step, "conv", {}, {}, 0});
    m.add_rank("conv", at::randn({64, 64, 8, 8}), 1);
  }
  if (which == 2 || which == 4) cka(1024);
  if (which == 3 || which == 4) cka(4096);
}

void run_rank(int rank, int world, const std::string& dir, int steps) {
  auto group = gradscope::test::make_group(dir, rank, world, std::chrono::seconds(60));
  gradscope::torch::internal::SpectraMerge merge(group, "bench", int64_t{64} << 20);
  std::ofstream out(dir + "/rank" + std::to_string(rank) + ".txt");
  std::vector<at::Tensor> grads{at::randn({3'200'000})};
  std::vector<double> reduce_s;
  for (int i = 0; i < steps + 3; ++i) {
    group->barrier()->wait();
    const auto t = Clock::now();
    group->allreduce(grads)->wait();
    if (i >= 3) reduce_s.push_back(std::chrono::duration<double>(Clock::now() - t).count());
  }
  out << median(reduce_s);
  for (int which = 0; which < 5; ++which) {
    std::vector<double> merge_s;
    gradscope::StepRecords step;
    std::vector<std::string> warnings;
    for (int i = 0; i < steps + 3; ++i) {
      step.step = i;
      register_case(merge, step, which);
      group->barrier()->wait();
      const auto t = Clock::now();
      merge.merge(step, warnings);
      if (i >= 3) merge_s.push_back(std::chrono::duration<double>(Clock::now() - t).count());
    }
    out << " " << median(merge_s) << " " << merge.last_bytes();
  }
  out << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = std::getenv("BENCH_STEPS") ? std::atoi(std::getenv("BENCH_STEPS")) : 30;
  if (argc >= 6 && std::string(argv[1]) == gradscope::test::kRankWorker) {
    at::set_num_threads(1);  // the ranks share the machine's cores
    run_rank(std::stoi(argv[3]), std::stoi(argv[4]), argv[5], steps);
    return 0;
  }
  std::printf("exact effective ranks and CKA across ranks, Gloo on loopback; %u cores (%d steps a case, medians)\n",
              std::thread::hardware_concurrency(), steps);
  double share[5] = {0, 0, 0, 0, 0};
  for (int world : {2, 4}) {
    const gradscope::test::TempDir scratch("gs-bench-spectra");
    const std::vector<int> codes = gradscope::test::wait_workers(gradscope::test::start_workers("bench", world, scratch.path), 600);
    for (int c : codes)
      if (c != 0) {
        std::fprintf(stderr, "bench-spectra: a worker of %d exited with %d\n", world, c);
        return 1;
      }
    std::ifstream in(scratch.path + "/rank0.txt");
    double reduce = 0;
    in >> reduce;
    std::printf("%d ranks: all-reduce of 3.2M float gradients %8.3f ms\n", world, reduce * 1e3);
    for (const char* name : kCases) {
      double merged = 0, bytes = 0;
      in >> merged >> bytes;
      std::printf("%d ranks: %-34s merge %8.3f ms, %9.0f bytes sent a rank, share %.3f\n", world, name, merged * 1e3,
                  bytes, merged / reduce);
      share[world] = merged / reduce;  // the last case: all four
    }
  }
  std::printf("{\"bench\":\"spectra\",\"all_share_2\":%.4f,\"all_share_4\":%.4f}\n", share[2], share[4]);
  return 0;
}
