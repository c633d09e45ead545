// An EmbeddingHub across processes (issue 16): four tables, two on one process group, one on
// another and one on none, at 2 and 3 worker processes on loopback, against the same tables as lone trackers
// and against one process fed every lookup; the collectives counted per group and step; a rank
// that dies or stalls in the middle of the run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <torch/nn/modules/embedding.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "../common/ranks.h"
#include "../common/rank_test_main.h"
#include "embedding_workers.h"
#include "gradscope/torch/embedding/tracker.h"

namespace gradscope::torch {
namespace {

using ::testing::HasSubstr;
using test::job_indices;
using test::read_file;
using test::shard;

constexpr int kSteps = 6;
constexpr int kFailStep = 2;  // "die" and "stall": the last rank fails before this step's merge

// A table: its name, rows, rows its lookups range over (the others stay dead), its group
// (0 or 1) and how often it is tracked.
struct Table {
  const char* name;
  int64_t rows;
  int64_t range;
  int group;
  int track_every;
};
// items and users share group 0 (users tracked every other step); tags has group 1 to itself;
// ctx has none (-1): every rank looks up all of its lookups, so each rank's own state of it is
// the one process's.
constexpr Table kTables[] = {
    {"items", 50, 40, 0, 1}, {"users", 30, 25, 0, 2}, {"tags", 20, 15, 1, 1}, {"ctx", 12, 9, -1, 1}};
constexpr int kDim = 4;

// Table `i`'s lookups (and negatives) of step `s` on `rank`.
at::Tensor lookups(std::size_t i, int s, bool negatives, int rank, int world) {
  return shard(job_indices(s, negatives, kTables[i].range, i), kTables[i].group < 0 ? 0 : rank,
               kTables[i].group < 0 ? 1 : world);
}

// Rows of `group`'s tables this rank touches at step `s` (those tracked at s).
int64_t touched_rows(int group, int s, int rank, int world) {
  int64_t n = 0;
  for (std::size_t i = 0; i < std::size(kTables); ++i)
    if (kTables[i].group == group && s % kTables[i].track_every == 0)
      n += std::get<0>(at::_unique(at::cat({lookups(i, s, false, rank, world), lookups(i, s, true, rank, world)}))).numel();
  return n;
}

// The job: "hub" steps the tables with an EmbeddingHub, "lone" with a tracker each, "die" and
// "stall" are "hub" with the last rank killed or asleep before step kFailStep's merge, "rate"
// is "hub" with rank 1 tracking users every step (the others every other). World 1
// without groups is the one-process reference. Returns each table's state, then the hub's
// correlations. `rounds[g]` gets group g's allgathers: the trackers' construction, then each step.
std::string run_tables(const std::string& mode, int rank, int world, const std::vector<ProcessGroupPtr>& groups,
                       std::vector<std::vector<int64_t>>* rounds = nullptr) {
  ::torch::manual_seed(0);
  std::vector<::torch::nn::Embedding> embs;
  std::vector<at::Tensor> params;
  for (const Table& t : kTables) {
    embs.emplace_back(t.rows, kDim);
    params.push_back(embs.back()->weight);
  }
  const auto count = [&](int g, int64_t before) {
    const auto* c = groups.empty() ? nullptr : dynamic_cast<const test::CountingGroup*>(groups[static_cast<std::size_t>(g)].get());
    return c ? c->allgathers - before : 0;
  };
  std::vector<int64_t> seen(groups.size(), 0);
  const auto record = [&] {
    for (std::size_t g = 0; g < groups.size(); ++g) {
      if (rounds) (*rounds)[g].push_back(count(static_cast<int>(g), seen[g]));
      seen[g] += count(static_cast<int>(g), seen[g]);
    }
  };
  EmbeddingHub hub;
  std::vector<std::unique_ptr<EmbeddingTracker>> lone;
  std::vector<EmbeddingTracker*> trackers;
  for (std::size_t i = 0; i < std::size(kTables); ++i) {
    EmbeddingTrackerOptions o;
    o.track_every = mode == "rate" && rank == 1 ? 1 : kTables[i].track_every;
    if (!groups.empty() && kTables[i].group >= 0) o.process_group = groups[static_cast<std::size_t>(kTables[i].group)];
    if (mode == "lone") {
      lone.push_back(std::make_unique<EmbeddingTracker>(embs[i], kTables[i].name, o));
      trackers.push_back(lone.back().get());
    } else {
      trackers.push_back(&hub.track(embs[i], kTables[i].name, o));
    }
  }
  record();
  ::torch::optim::SGD sgd(params, 0.1);
  // Dyadic weights: the summed shards' gradient equals the one process's bit for bit.
  const at::Tensor c = at::tensor({0.5f, -0.25f, 1.0f, 0.125f}), n = at::tensor({-0.5f, 0.25f, 0.75f, -1.0f});
  for (int s = 0; s < kSteps; ++s) {
    sgd.zero_grad();
    at::Tensor loss = at::zeros({});
    for (std::size_t i = 0; i < trackers.size(); ++i) {
      loss = loss + (trackers[i]->forward(lookups(i, s, false, rank, world)) * c).sum() +
             (trackers[i]->forward(lookups(i, s, true, rank, world), Role::kNegative) * n).sum();
    }
    loss.backward();
    for (std::size_t g = 0; g < embs.size() && !groups.empty(); ++g) {  // sum the gradients (DDP)
      if (kTables[g].group < 0) continue;  // ctx: each rank's own, already the job's
      std::vector<at::Tensor> grad{embs[g]->weight.grad()};
      groups[0]->allreduce(grad)->wait();
    }
    if (s == kFailStep && rank == world - 1) {
      if (mode == "die") raise(SIGKILL);
      if (mode == "stall") std::this_thread::sleep_for(std::chrono::seconds(60));
    }
    if (mode == "lone") {
      for (EmbeddingTracker* t : trackers) t->before_step();
      sgd.step();
      for (EmbeddingTracker* t : trackers) t->after_step();
    } else {
      hub.step(sgd);
    }
    record();
  }
  std::string out;
  for (EmbeddingTracker* t : trackers) out += "T " + t->layer() + "\n" + test::dump(*t);
  if (mode != "lone") {
    char line[128];
    for (const TowerCorrelation& k : hub.report().correlations) {
      std::snprintf(line, sizeof line, "C %s %s %a %lld\n", k.a.c_str(), k.b.c_str(), k.pearson,
                    static_cast<long long>(k.steps));
      out += line;
    }
  }
  return out;
}

int run_worker(const std::string& mode, int rank, int world, const std::string& dir) {
  const std::string base = dir + "/rank" + std::to_string(rank);
  try {
    const auto timeout = std::chrono::milliseconds(mode == "stall" ? 2000 : 30000);
    std::filesystem::create_directories(dir + "/g1");
    std::vector<ProcessGroupPtr> groups{
        c10::make_intrusive<test::CountingGroup>(test::make_group(dir, rank, world, timeout)),
        c10::make_intrusive<test::CountingGroup>(test::make_group(dir + "/g1", rank, world, timeout))};
    std::vector<std::vector<int64_t>> rounds(groups.size());
    const std::string text = run_tables(mode, rank, world, groups, &rounds);
    std::ofstream(base + ".txt") << text;
    for (std::size_t g = 0; g < rounds.size(); ++g) {
      std::ofstream r(base + ".rounds" + std::to_string(g));
      for (int64_t k : rounds[g]) r << k << " ";
    }
  } catch (const Error& e) {
    std::ofstream(base + ".err") << e.what();
    return 3;
  }
  return 0;
}

// Group g's allgathers as the hub must make them: one per table at construction, then per step
// one when any of its tables is tracked, and a second when some rank touched more rows of the
// group's tables than the buffer holds (from 8, grown to the power of two that holds them).
std::string expected_rounds(int group, int world) {
  int64_t tables = 0;
  for (const Table& t : kTables) tables += t.group == group;
  std::string out = std::to_string(tables) + " ";
  int64_t capacity = 8;
  for (int s = 0; s < kSteps; ++s) {
    bool any = false;
    for (const Table& t : kTables) any = any || (t.group == group && s % t.track_every == 0);
    int64_t most = 0;
    for (int r = 0; r < world; ++r) most = std::max(most, touched_rows(group, s, r, world));
    const bool grow = most > capacity;
    while (capacity < most) capacity *= 2;
    out += std::to_string(any ? (grow ? 2 : 1) : 0) + " ";
  }
  return out;
}

TEST(EmbeddingHubDistributed, OneCollectivePerGroupAndStepSameStateAsLoneTrackersAndOneProcess) {
  const std::string want = run_tables("hub", 0, 1, {});
  ASSERT_THAT(want, HasSubstr("D DEAD_ROWS"));  // dead rows in every table: compared below
  ASSERT_THAT(want, HasSubstr("C items users"));
  for (int world : {2, 3}) {
    const test::TempDir hub("gs-disthub"), lone("gs-disthub");
    EXPECT_THAT(test::wait_workers(test::start_workers("hub", world, hub.path), 120), ::testing::Each(0));
    EXPECT_THAT(test::wait_workers(test::start_workers("lone", world, lone.path), 120), ::testing::Each(0));
    const std::string lone_want = want.substr(0, want.find("\nC ") + 1);  // lone trackers: no hub report
    for (int r = 0; r < world; ++r) {
      const std::string h = hub.path + "/rank" + std::to_string(r), l = lone.path + "/rank" + std::to_string(r);
      // Per-row exposure, lookups, negatives, last seen, updates, velocity, oscillation, SNR,
      // diagnostics and correlations: bit for bit the one process's, and the lone trackers'.
      EXPECT_EQ(read_file(h + ".txt"), want) << "world " << world << " rank " << r;
      EXPECT_EQ(read_file(l + ".txt"), lone_want) << "world " << world << " rank " << r;
      // items and users share group 0: one collective a step for both (plus one when it grows).
      EXPECT_EQ(read_file(h + ".rounds0"), expected_rounds(0, world)) << "world " << world << " rank " << r;
      EXPECT_EQ(read_file(h + ".rounds1"), expected_rounds(1, world)) << "world " << world << " rank " << r;
    }
    // Lone trackers make one a table: the hub's saving is real in this data.
    EXPECT_NE(read_file(lone.path + "/rank0.rounds0"), expected_rounds(0, world));
  }
}

TEST(EmbeddingHubDistributed, TableTrackedOnSomeRanksOnlyFailsEveryRankNamingIt) {
  // At step 1 rank 1 tracks users and rank 0 does not: their buffers still have one size (every
  // table of the group travels), so both throw, naming the table and the steps.
  const test::TempDir scratch("gs-disthub");
  EXPECT_THAT(test::wait_workers(test::start_workers("rate", 2, scratch.path), 60), ::testing::Each(3));
  for (int r = 0; r < 2; ++r)
    EXPECT_EQ(read_file(scratch.path + "/rank" + std::to_string(r) + ".err"),
              "embedding 'users': ranks are at different steps (rank 0 at step 1 (not tracked), rank 1 at "
              "step 1); every rank needs the same track_every and one step() per training step");
}

TEST(EmbeddingHubDistributed, RankKilledMidRunFailsTheOthersAtOnce) {
  const test::TempDir scratch("gs-disthub");
  EXPECT_THAT(test::wait_workers(test::start_workers("die", 3, scratch.path), 60),
              ::testing::ElementsAre(3, 3, 128 + SIGKILL));
  for (int r = 0; r < 2; ++r) {
    const std::string err = read_file(scratch.path + "/rank" + std::to_string(r) + ".err");
    EXPECT_THAT(err, HasSubstr("of 3 (gloo): the merge of the touched rows of step 2 failed; a rank died or stalled"));
    // Gloo saw the closed connection (its own or the next rank's), not the group's 30 s timeout.
    EXPECT_THAT(err, ::testing::Not(HasSubstr("Timed out")));
  }
}

TEST(EmbeddingHubDistributed, StalledRankFailsTheOthersWithinTheTimeout) {
  const test::TempDir scratch("gs-disthub");
  const auto pids = test::start_workers("stall", 3, scratch.path);
  // Bounded: the workers' start and the 2 s timeout, well inside the sleeper's 60 s.
  EXPECT_THAT(test::wait_workers({pids[0], pids[1]}, 50), ::testing::ElementsAre(3, 3));
  test::wait_workers({pids[2]}, 0);  // still asleep: killed
  // The first to time out names the timeout; the other may see it leave first.
  std::string both;
  for (int r = 0; r < 2; ++r) {
    const std::string err = read_file(scratch.path + "/rank" + std::to_string(r) + ".err");
    EXPECT_THAT(err, HasSubstr("embeddings 'items', 'users': rank " + std::to_string(r) +
                               " of 3 (gloo): the merge of the touched rows of step 2 failed; a rank died or stalled"));
    both += err;
  }
  EXPECT_THAT(both, HasSubstr("Timed out waiting 2000ms"));
}

}  // namespace
}  // namespace gradscope::torch

int main(int argc, char** argv) { return gradscope::test::rank_test_main(argc, argv, gradscope::torch::run_worker); }
