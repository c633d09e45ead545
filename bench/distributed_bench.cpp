// make bench-distributed: the audit across 1, 2 and 4 processes (Gloo on loopback, one
// FileStore), on this machine's cores. Per audited step, the time of gradscope's collective
// (RankMerge::merge of the step's records: pack, one allgather, merge) against the step's own
// gradient all-reduce (one flat buffer, as DDP's bucket would be), both on the same ranks, one
// after the other each step, each timed from a barrier so that neither includes waiting for a
// slower rank's compute. Two models: the 3.2M-parameter MLP of bench-audit
// (64-1024x4-10, batch 64 a rank) and the digits-sized MLP (64-64-32-10).
// The workers are this program run again; rank 0 prints. Medians over BENCH_STEPS steps (30).
// With AuditOptions::merge_async the step only pays for starting the collective and,
// at the next step, for waiting on what is left of it and merging: "async" times those two
// (a second RankMerge of the same step, started after the timed one, finished at the next
// step after its compute and gradient all-reduce, without a barrier).
// Last line: {"bench":"distributed","collective_share_2":X,"collective_share_4":Y,
// "async_share_2":A,"async_share_4":B}, the shares of the 3.2M model (gradscope's collective
// time, or its time in the step with merge_async, / the gradient all-reduce time).
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <ATen/Functions.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "../tests/common/ranks.h"
#include "gradscope/torch/audit/audit.h"
#include "gradscope/torch/distributed/rank_merge.h"

namespace {

namespace nn = ::torch::nn;
using Clock = std::chrono::steady_clock;

nn::Sequential make_mlp(bool big) {
  ::torch::manual_seed(0);
  nn::Sequential net;
  const std::vector<int64_t> widths = big ? std::vector<int64_t>{64, 1024, 1024, 1024, 1024, 10}
                                          : std::vector<int64_t>{64, 64, 32, 10};
  for (std::size_t i = 0; i + 1 < widths.size(); ++i) {
    net->push_back("fc" + std::to_string(i), nn::Linear(widths[i], widths[i + 1]));
    if (i + 2 < widths.size()) net->push_back("act" + std::to_string(i), nn::ReLU());
  }
  return net;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// One rank: audited steps of `big`'s model; medians of step, gradient all-reduce and merge.
void run_rank(bool big, int rank, int world, const std::string& dir, int steps, std::ofstream& out) {
  gradscope::torch::ProcessGroupPtr group;
  if (world > 1) group = gradscope::test::make_group(dir + (big ? "/big" : "/small"), rank, world, std::chrono::seconds(60));
  nn::Sequential model = make_mlp(big);
  ::torch::optim::SGD sgd(model->parameters(), 0.01);
  gradscope::StepRecords last;  // the step's records, as the audit has them before its merge
  gradscope::torch::AuditOptions options;
  options.on_step = [&](const std::vector<gradscope::Record>& r) { last.records = r; };
  gradscope::torch::Audit audit(model, options);
  std::unique_ptr<gradscope::torch::RankMerge> merge, async_merge;  // made once the audit knows its nodes
  ::torch::manual_seed(1 + rank);
  const at::Tensor x = ::torch::randn({64, 64}), y = ::torch::randint(0, 10, {64});
  std::vector<double> step_s, reduce_s, merge_s, exposed_s;
  for (int i = 0; i < steps + 5; ++i) {  // 5 warm-up steps
    const auto t0 = Clock::now();
    sgd.zero_grad();
    ::torch::nn::functional::cross_entropy(audit.forward(model, x), y).backward();
    double reduce = 0;
    if (group) {
      std::vector<at::Tensor> grads;
      for (const at::Tensor& p : model->parameters()) grads.push_back(p.grad().reshape(-1));
      std::vector<at::Tensor> flat{at::cat(grads)};
      group->barrier()->wait();  // both timings start with the ranks in step: no waiting on a slower rank
      const auto t = Clock::now();
      group->allreduce(flat)->wait();
      reduce = seconds_since(t);
      flat[0].div_(world);
      int64_t at = 0;
      for (at::Tensor& p : model->parameters()) {
        p.grad().view(-1).copy_(flat[0].narrow(0, at, p.numel()));
        at += p.numel();
      }
    }
    audit.step(sgd);
    if (group && !merge) {
      const std::vector<std::string> ids = audit.node_ids();
      merge = std::make_unique<gradscope::torch::RankMerge>(group, "bench", ids, std::vector<std::string>(ids.size()));
      async_merge = std::make_unique<gradscope::torch::RankMerge>(group, "bench", ids, std::vector<std::string>(ids.size()));
    }
    double merged = 0, exposed = 0;
    if (merge) {
      // merge_async: the previous step's collective, in flight since then, waited on now
      // (after this step's compute and gradient all-reduce), as the audit does.
      if (async_merge->pending()) {
        const auto t = Clock::now();
        async_merge->finish();
        exposed = seconds_since(t);
      }
      last.step = audit.current_step() - 1;
      group->barrier()->wait();
      const auto t = Clock::now();
      merge->merge(last);
      merged = seconds_since(t);
      const auto a = Clock::now();
      async_merge->start(last, /*views_step=*/false);
      exposed += seconds_since(a);
    }
    if (i < 5) continue;
    step_s.push_back(seconds_since(t0) - merged - exposed);
    reduce_s.push_back(reduce);
    merge_s.push_back(merged);
    exposed_s.push_back(exposed);
  }
  if (async_merge && async_merge->pending()) async_merge->finish();
  if (rank == 0)
    out << median(step_s) << " " << median(reduce_s) << " " << median(merge_s) << " " << last.records.size() << " "
        << median(exposed_s) << "\n";
}

}  // namespace

int main(int argc, char** argv) {
  const int steps = std::getenv("BENCH_STEPS") ? std::atoi(std::getenv("BENCH_STEPS")) : 30;
  if (argc >= 6 && std::string(argv[1]) == gradscope::test::kRankWorker) {
    const int rank = std::stoi(argv[3]), world = std::stoi(argv[4]);
    const std::string dir = argv[5];
    at::set_num_threads(1);  // the ranks share the machine's cores
    std::ofstream out(dir + "/rank" + std::to_string(rank) + ".txt");
    for (bool big : {false, true}) run_rank(big, rank, world, dir, steps, out);
    return 0;
  }
  std::printf("distributed audit, Gloo on loopback; this machine has %u cores, so 4 ranks share 2 cores "
              "(%d audited steps a case, medians; LibTorch 1 thread a rank)\n",
              std::thread::hardware_concurrency(), steps);
  double share[5] = {0, 0, 0, 0, 0}, exposed_share[5] = {0, 0, 0, 0, 0};
  for (int world : {1, 2, 4}) {
    const gradscope::test::TempDir scratch("gs-bench-dist");
    const std::string& dir = scratch.path;
    for (const char* sub : {"/big", "/small"}) std::filesystem::create_directory(dir + sub);  // a store each
    const std::vector<int> codes = gradscope::test::wait_workers(gradscope::test::start_workers("bench", world, dir), 600);
    for (int c : codes)
      if (c != 0) {
        std::fprintf(stderr, "bench-distributed: a worker of %d exited with %d\n", world, c);
        return 1;
      }
    std::ifstream in(dir + "/rank0.txt");
    for (const char* model : {"64-64-32-10 MLP", "3.2M-param MLP"}) {
      double step = 0, reduce = 0, merged = 0, exposed = 0;
      std::size_t records = 0;
      in >> step >> reduce >> merged >> records >> exposed;
      std::printf("%d rank%s, %-16s: audited step %8.3f ms", world, world > 1 ? "s" : " ", model, step * 1e3);
      if (world > 1) {
        std::printf(", gradient all-reduce %7.3f ms, gradscope collective %6.3f ms (%zu records), share %.3f; "
                    "async: %6.3f ms in the step, share %.3f",
                    reduce * 1e3, merged * 1e3, records, merged / reduce, exposed * 1e3, exposed / reduce);
        if (std::string(model)[0] == '3') share[world] = merged / reduce, exposed_share[world] = exposed / reduce;
      }
      std::printf("\n");
    }
  }
  std::printf("{\"bench\":\"distributed\",\"collective_share_2\":%.4f,\"collective_share_4\":%.4f,"
              "\"async_share_2\":%.4f,\"async_share_4\":%.4f}\n",
              share[2], share[4], exposed_share[2], exposed_share[4]);
  return 0;
}
