// The embedding tracker across processes (issue 16): 2 and 4 worker processes of this program
// on loopback (FileStore + ProcessGroupGloo), each looking up a shard of every step's indices,
// against one process looking up all of them. Each worker writes its tracker's per-row state to
// <dir>/rank<r>.txt (or its error to rank<r>.err); the test compares the texts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/embedding.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <fstream>
#include <sstream>

#include "../common/ranks.h"
#include "../common/rank_test_main.h"
#include "embedding_workers.h"
#include "gradscope/torch/embedding/tracker.h"

namespace gradscope::torch {
namespace {

using ::testing::HasSubstr;
constexpr int64_t kRows = 50;  // rows 40..49 are never looked up: dead
constexpr int64_t kDim = 4;
constexpr int kSteps = 6;
constexpr int kGrowStep = 3;
constexpr int kTimeoutMs = 30000;  // the group's: the failures below must come well before it

using test::dump;
using test::job_indices;
using test::read_file;
using test::shard;

// This rank's lookups of step `s`. "grow": at kGrowStep the last rank also looks up each of rows
// 0..39 once, so it touches far more rows than before and than the other ranks.
at::Tensor lookups(const std::string& mode, int s, int rank, int world) {
  at::Tensor ids = shard(job_indices(s, false), rank, world);
  if (mode == "grow" && s == kGrowStep && rank == world - 1) ids = at::cat({ids, at::arange(40, at::kLong)});
  return ids;
}

// Rows this rank touches at step `s` (lookups and negatives, distinct).
int64_t touched_rows(const std::string& mode, int s, int rank, int world) {
  return std::get<0>(at::_unique(at::cat({lookups(mode, s, rank, world), shard(job_indices(s, true), rank, world)}))).numel();
}

// One job (world 1 and no group: the one-process reference). Modes: "avg" sums the gradients
// across ranks (each rank then holds the job's gradient), "local" keeps each rank's own,
// "shape" gives rank 1 a larger table, "grow" is "avg" with a step where the last rank touches
// many more rows (lookups()); "rate" gives rank 1 track_every 2 and "skip" has rank 1 skip its
// step() of step 2 (both "local": the gradient all-reduce would meet the other ranks' merge).
// `rounds` gets the allgathers of the construction and then of each step.
std::string run_tracker(const std::string& mode, int rank, int world, const ProcessGroupPtr& group,
                        std::vector<std::string>* warnings = nullptr, std::vector<int64_t>* rounds = nullptr) {
  const bool local = mode == "local" || mode == "rate" || mode == "skip";
  ::torch::manual_seed(0);
  ::torch::nn::Embedding emb(mode == "shape" && rank == 1 ? kRows + 10 : kRows, kDim);
  EmbeddingTrackerOptions options;
  options.process_group = group;
  if (mode == "rate" && rank == 1) options.track_every = 2;
  const auto* counting = dynamic_cast<const test::CountingGroup*>(group.get());
  const auto count = [&] {
    if (rounds && counting) rounds->push_back(counting->allgathers - std::accumulate(rounds->begin(), rounds->end(), int64_t{0}));
  };
  EmbeddingTracker tracker(emb, "items", options);
  count();
  ::torch::optim::SGD sgd(emb->parameters(), 0.1);
  // Dyadic weights: a row's gradient is a sum of a few of them, exact in any order, so the
  // summed shards equal the one-process gradient bit for bit.
  const at::Tensor c = at::tensor({0.5f, -0.25f, 1.0f, 0.125f}), n = at::tensor({-0.5f, 0.25f, 0.75f, -1.0f});
  for (int s = 0; s < kSteps; ++s) {
    sgd.zero_grad();
    const at::Tensor e = tracker.forward(lookups(mode, s, rank, world));
    const at::Tensor neg = tracker.forward(shard(job_indices(s, true), rank, world), Role::kNegative);
    ((e * c).sum() + (neg * n).sum()).backward();
    if (group && !local) {
      std::vector<at::Tensor> g{emb->weight.grad()};
      group->allreduce(g)->wait();
    }
    if (mode == "skip" && rank == 1 && s == 2) continue;
    tracker.step(sgd);
    count();
  }
  if (warnings) *warnings = tracker.warnings();
  return dump(tracker);
}

int run_worker(const std::string& mode, int rank, int world, const std::string& dir) {
  const std::string base = dir + "/rank" + std::to_string(rank);
  try {
    const auto group = c10::make_intrusive<test::CountingGroup>(
        test::make_group(dir, rank, world, std::chrono::milliseconds(kTimeoutMs)));
    std::vector<std::string> warnings;
    std::vector<int64_t> rounds;
    const std::string text = run_tracker(mode, rank, world, group, &warnings, &rounds);
    std::ofstream(base + ".txt") << text;
    std::ofstream w(base + ".warn");
    for (const std::string& s : warnings) w << s << "\n";
    std::ofstream r(base + ".rounds");
    for (int64_t k : rounds) r << k << " ";
  } catch (const Error& e) {
    std::ofstream(base + ".err") << e.what();
    return 3;
  }
  return 0;
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

TEST(EmbeddingDistributed, BuffersGrowWhenOneRankTouchesManyMoreRows) {
  const std::string want = run_tracker("grow", 0, 1, ProcessGroupPtr());
  ASSERT_NE(want, run_tracker("avg", 0, 1, ProcessGroupPtr()));  // the extra lookups count
  for (int world : {2, 3}) {
    const test::TempDir scratch("gs-distemb");
    EXPECT_THAT(test::wait_workers(test::start_workers("grow", world, scratch.path), 60), ::testing::Each(0));
    // The allgathers each step must take: one, and a second where some rank touched more rows
    // than the agreed capacity (from 8, to the power of two that holds them).
    std::string rounds = "1 ";
    int64_t capacity = 8;
    bool grew_at_grow_step = false;
    for (int s = 0; s < kSteps; ++s) {
      int64_t most = 0;
      for (int r = 0; r < world; ++r) most = std::max(most, touched_rows("grow", s, r, world));
      const bool grow = most > capacity;
      while (capacity < most) capacity *= 2;
      rounds += grow ? "2 " : "1 ";
      if (s == kGrowStep) grew_at_grow_step = grow;
    }
    EXPECT_TRUE(grew_at_grow_step) << "the step meant to grow the buffers did not";
    for (int r = 0; r < world; ++r) {
      const std::string at = scratch.path + "/rank" + std::to_string(r);
      EXPECT_EQ(read_file(at + ".txt"), want) << "world " << world << " rank " << r;
      EXPECT_EQ(read_file(at + ".rounds"), rounds) << "world " << world << " rank " << r;
    }
  }
}

TEST(EmbeddingDistributed, AnotherTrackEveryFailsEveryRankNamingTheSteps) {
  const test::TempDir scratch("gs-distemb");
  EXPECT_THAT(test::wait_workers(test::start_workers("rate", 2, scratch.path), 60), ::testing::Each(3));
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(read_file(scratch.path + "/rank" + std::to_string(r) + ".err"),
              "embedding 'items': ranks are at different steps (rank 0 at step 1, rank 1 at step 2); every "
              "rank needs the same track_every and one step() per training step");
}

TEST(EmbeddingDistributed, SkippedStepCallEndsInAnErrorNotAHang) {
  // A skipped step() call leaves the ranks' step counts paired (each counts its own calls), so
  // the merges meet until the rank that skipped runs out of steps and leaves: the other then
  // fails its last merge at once instead of waiting.
  const test::TempDir scratch("gs-distemb");
  EXPECT_THAT(test::wait_workers(test::start_workers("skip", 2, scratch.path), 60), ::testing::ElementsAre(3, 0));
  const std::string err = read_file(scratch.path + "/rank0.err");
  EXPECT_THAT(err, HasSubstr("embedding 'items': rank 0 of 2 (gloo): the merge of the touched rows of step 5 failed; "
                             "a rank died or stalled past the process group's timeout"));
  EXPECT_THAT(err, ::testing::Not(HasSubstr("Timed out")));  // the closed connection, not the 30 s timeout
}

}  // namespace
}  // namespace gradscope::torch

int main(int argc, char** argv) { return gradscope::test::rank_test_main(argc, argv, gradscope::torch::run_worker); }
