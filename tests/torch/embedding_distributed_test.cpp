// The embedding tracker across processes (issue 16): 2 and 4 worker processes of this program
// on loopback (FileStore + ProcessGroupGloo), each looking up a shard of every step's indices,
// against one process looking up all of them. Each worker writes its tracker's per-row state to
// <dir>/rank<r>.txt (or its error to rank<r>.err); the test compares the texts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/embedding.h>
#include <torch/optim/sgd.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>

#include "../common/ranks.h"
#include "gradscope/torch/embedding.h"

namespace gradscope::torch {
namespace {

using ::testing::HasSubstr;
constexpr int64_t kRows = 50;  // rows 40..49 are never looked up: dead
constexpr int64_t kDim = 4;
constexpr int kSteps = 6;

// Step `step`'s indices of the whole job: 24 lookups and 8 negatives, the same in every process.
std::vector<int64_t> job_indices(int step, bool negatives) {
  std::mt19937_64 gen(static_cast<uint64_t>(step) * 2 + negatives);
  std::vector<int64_t> ids(negatives ? 8 : 24);
  for (int64_t& i : ids) i = static_cast<int64_t>(gen() % 40);
  return ids;
}

// Every world-th index from `rank` (rank 0 of world 1: all of them).
at::Tensor shard(const std::vector<int64_t>& ids, int rank, int world) {
  std::vector<int64_t> mine;
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (static_cast<int>(i % static_cast<std::size_t>(world)) == rank) mine.push_back(ids[i]);
  return at::tensor(mine, at::kLong);
}

// Per row: every piece of state, doubles as exact hex; then the diagnostics' types and the
// dead-row evidence.
std::string dump(const EmbeddingTracker& t) {
  std::ostringstream out;
  const EmbeddingRows& r = t.rows();
  char line[256];
  for (int64_t i = 0; i < r.rows(); ++i) {
    std::snprintf(line, sizeof line, "%lld %u %u %u %d %u %u %u %a %a %a\n", static_cast<long long>(i),
                  r.exposure(i), r.lookups(i), r.negatives(i), r.last_seen(i), r.updates(i), r.gradients(i),
                  r.cosines(i), static_cast<double>(r.velocity(i)), static_cast<double>(r.oscillation(i)), r.snr(i));
    out << line;
  }
  for (const EmbeddingDiagnostic& d : t.report().diagnostics) {
    out << "D " << d.type;
    if (d.type == "DEAD_ROWS")
      for (const auto& [name, value] : d.evidence) out << " " << name << "=" << value;
    out << "\n";
  }
  return out.str();
}

// One job (world 1 and no group: the one-process reference). Modes: "avg" sums the gradients
// across ranks (each rank then holds the job's gradient), "local" keeps each rank's own,
// "shape" gives rank 1 a larger table.
std::string run_tracker(const std::string& mode, int rank, int world, const ProcessGroupPtr& group,
                        std::vector<std::string>* warnings = nullptr) {
  ::torch::manual_seed(0);
  ::torch::nn::Embedding emb(mode == "shape" && rank == 1 ? kRows + 10 : kRows, kDim);
  EmbeddingTrackerOptions options;
  options.process_group = group;
  EmbeddingTracker tracker(emb, "items", options);
  ::torch::optim::SGD sgd(emb->parameters(), 0.1);
  // Dyadic weights: a row's gradient is a sum of a few of them, exact in any order, so the
  // summed shards equal the one-process gradient bit for bit.
  const at::Tensor c = at::tensor({0.5f, -0.25f, 1.0f, 0.125f}), n = at::tensor({-0.5f, 0.25f, 0.75f, -1.0f});
  for (int s = 0; s < kSteps; ++s) {
    sgd.zero_grad();
    const at::Tensor e = tracker.forward(shard(job_indices(s, false), rank, world));
    const at::Tensor neg = tracker.forward(shard(job_indices(s, true), rank, world), Role::kNegative);
    ((e * c).sum() + (neg * n).sum()).backward();
    if (group && mode != "local") {
      std::vector<at::Tensor> g{emb->weight.grad()};
      group->allreduce(g)->wait();
    }
    tracker.step(sgd);
  }
  if (warnings) *warnings = tracker.warnings();
  return dump(tracker);
}

int run_worker(const std::string& mode, int rank, int world, const std::string& dir) {
  const std::string base = dir + "/rank" + std::to_string(rank);
  try {
    const auto group = test::make_group(dir, rank, world, std::chrono::milliseconds(10000));
    std::vector<std::string> warnings;
    const std::string text = run_tracker(mode, rank, world, group, &warnings);
    std::ofstream(base + ".txt") << text;
    std::ofstream w(base + ".warn");
    for (const std::string& s : warnings) w << s << "\n";
  } catch (const Error& e) {
    std::ofstream(base + ".err") << e.what();
    return 3;
  }
  return 0;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(EmbeddingDistributed, MergedRowsEqualOneProcessFedEveryLookup) {
  const std::string want = run_tracker("avg", 0, 1, ProcessGroupPtr());
  ASSERT_THAT(want, HasSubstr("D DEAD_ROWS"));  // the verdict compared below exists
  for (int world : {2, 4}) {
    const test::TempDir scratch("gs-distemb");
    EXPECT_THAT(test::wait_workers(test::start_workers("avg", world, scratch.path), 60), ::testing::Each(0));
    for (int r = 0; r < world; ++r) {
      // Exposure, lookups, negatives, last seen, updates, velocity, oscillation, SNR and the
      // diagnostics: every rank holds the one process's state, bit for bit.
      EXPECT_EQ(read_file(scratch.path + "/rank" + std::to_string(r) + ".txt"), want)
          << "world " << world << " rank " << r;
      EXPECT_THAT(read_file(scratch.path + "/rank" + std::to_string(r) + ".warn"),
                  ::testing::Not(HasSubstr("gradients differ")));
    }
  }
}

TEST(EmbeddingDistributed, ShardsAloneWouldNotMatch) {
  // The comparison above can fail: a rank's own shard leaves rows unexposed that the job used.
  EXPECT_NE(run_tracker("avg", 0, 2, ProcessGroupPtr()), run_tracker("avg", 0, 1, ProcessGroupPtr()));
}

TEST(EmbeddingDistributed, GradientsNotAveragedAreWarnedCountsStillMerged) {
  const test::TempDir scratch("gs-distemb");
  EXPECT_THAT(test::wait_workers(test::start_workers("local", 2, scratch.path), 60), ::testing::Each(0));
  EXPECT_THAT(read_file(scratch.path + "/rank0.warn"), HasSubstr("gradients differ across ranks"));
  // Counts (the first five columns) are still the job's.
  std::istringstream got(read_file(scratch.path + "/rank0.txt")), want(run_tracker("avg", 0, 1, ProcessGroupPtr()));
  for (int64_t i = 0; i < kRows; ++i) {
    std::string g, w;
    std::getline(got, g);
    std::getline(want, w);
    const auto head = [](const std::string& s) {
      std::istringstream f(s);
      std::string out, x;
      for (int k = 0; k < 5 && f >> x; ++k) out += x + " ";
      return out;
    };
    EXPECT_EQ(head(g), head(w)) << "row " << i;
  }
}

TEST(EmbeddingDistributed, TablesOfAnotherShapeFailNamingTheDifference) {
  const test::TempDir scratch("gs-distemb");
  EXPECT_THAT(test::wait_workers(test::start_workers("shape", 2, scratch.path), 60), ::testing::Each(3));
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(read_file(scratch.path + "/rank" + std::to_string(r) + ".err"),
              "embedding 'items': ranks disagree on the table: rank 0 has [50, 4] but rank 1 has [60, 4]");
}

}  // namespace
}  // namespace gradscope::torch

int main(int argc, char** argv) {
  if (argc >= 6 && std::string(argv[1]) == gradscope::test::kRankWorker)
    return gradscope::torch::run_worker(argv[2], std::stoi(argv[3]), std::stoi(argv[4]), argv[5]);
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
