// kill -9 of a process writing a run: every step it saw committed is there, and nothing is
// half-written: each step read has all its records, its channel record and its similarity record.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include <chrono>
#include <map>
#include <set>

#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "store/internal/wal_check.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

using test::node_name;
using test::same_stats;
using test::stats_for;

constexpr int kNodes = 12;

ChannelRecord channel_for(int64_t step) { return {step, node_name(3), {stats_for(step, 1), stats_for(step, 2)}, {}, 2.0}; }

// The child: writes steps forever, reporting on `ack` each step it has seen committed.
[[noreturn]] void child_writes(const std::string& dir, int ack) {
  try {
    RunWriterOptions opt;
    opt.queue_capacity = 256;
    RunWriter w(dir, opt);
    for (int64_t step = 0; step < 1000000; ++step) {
      for (int n = 0; n < kNodes; ++n) w.add(Record{step, node_name(n), Site::kParamGrad, stats_for(step, n)});
      w.add(channel_for(step));
      w.add(SimilarityRecord{step, node_name(0), "other", static_cast<double>(step)});
      if (step % 5 == 4) {  // the steps in between may or may not be on disk at the kill
        w.commit();
        if (write(ack, &step, sizeof step) != sizeof step) _exit(2);
      }
    }
  } catch (...) {
    _exit(3);
  }
  _exit(0);
}

TEST(RunStoreCrash, KillDashNineKeepsEveryCommittedStepAndNoPartialOne) {
  const auto dir = test::fresh_dir("crash");
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    const std::string run = (dir / ("run" + std::to_string(round))).string();
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      child_writes(run, fds[1]);
    }
    close(fds[1]);
    // Kill at a different moment each round, while the child keeps writing.
    const int64_t kill_after = 40 + 37 * round;
    int64_t committed = -1, step = 0;
    while (committed < kill_after && read(fds[0], &step, sizeof step) == sizeof step) committed = step;
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child exited early with " << WEXITSTATUS(status);
    while (read(fds[0], &step, sizeof step) == sizeof step) committed = step;  // acks in flight
    close(fds[0]);
    ASSERT_GE(committed, kill_after);

    RunReader r(run);
    EXPECT_EQ(r.metadata().end_time, "");  // never closed
    std::map<int64_t, std::vector<Record>> steps;
    std::map<int64_t, std::vector<ChannelRecord>> channels;
    std::map<int64_t, std::vector<SimilarityRecord>> similarities;
    r.for_each(RunVisitor{[&](const Record& rec) { steps[rec.step].push_back(rec); },
                          [&](const ChannelRecord& c) { channels[c.step].push_back(c); },
                          [&](const SimilarityRecord& x) { similarities[x.step].push_back(x); }, {}});
    EXPECT_TRUE(r.warnings().empty());
    ASSERT_EQ(channels.size(), steps.size());
    ASSERT_EQ(similarities.size(), steps.size());
    ASSERT_GE(steps.size(), static_cast<std::size_t>(committed + 1));
    int64_t expect = 0;
    for (const auto& [s, records] : steps) {
      ASSERT_EQ(s, expect++) << "steps are committed in order";
      ASSERT_EQ(records.size(), static_cast<std::size_t>(kNodes)) << "step " << s << " is half-written";
      for (int n = 0; n < kNodes; ++n) {
        ASSERT_EQ(records[n].node, node_name(n));
        ASSERT_TRUE(same_stats(records[n].stats, stats_for(s, n))) << "step " << s << " node " << n;
      }
      ASSERT_EQ(channels[s].size(), 1u) << "step " << s << " without its channel record";
      ASSERT_TRUE(same_stats(channels[s][0].activation.at(1), channel_for(s).activation[1]));
      ASSERT_EQ(similarities[s].size(), 1u) << "step " << s << " without its similarity record";
      ASSERT_EQ(similarities[s][0].cka, static_cast<double>(s));
    }
  }
  std::filesystem::remove_all(dir);
}

// A writer killed inside a transaction can leave a log of its header alone beside its index, and
// no live connection. A read-only connection cannot recover that index, and SQLite retried it for about
// 10 s before giving up (then the reader fell back to the file alone); the reader now sees the
// index unused and reads the file alone at once. Ten reads, each milliseconds, within a
// generous 20 s (two fitted before).
TEST(RunStoreCrash, AnEmptyLogLeftByAKilledWriterReadsAtOnce) {
  const std::string dir = test::fresh_dir("crash-empty-log").string();
  {
    RunWriter w(dir);
    for (int64_t step = 0; step < 3; ++step) w.add(Record{step, node_name(0), Site::kParamGrad, stats_for(step, 0)});
    w.close();
  }
  const std::string db = dir + "/run.db";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    sqlite3* h = nullptr;
    if (sqlite3_open(db.c_str(), &h) != SQLITE_OK) _exit(2);
    // More than SQLite's page cache holds: pages spill into the log, uncommitted, as a large
    // upgrade's do.
    if (sqlite3_exec(h,
                     "BEGIN IMMEDIATE; WITH RECURSIVE n(i) AS (SELECT 100 UNION ALL SELECT i + 1 FROM n WHERE i < 5100) "
                     "INSERT INTO warnings(position, text, checksum) SELECT i, printf('%.1000c', 'x'), 0 FROM n;",
                     nullptr, nullptr, nullptr) != SQLITE_OK)
      _exit(3);
    kill(getpid(), SIGKILL);  // inside the transaction: nothing committed
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the writer exited " << WEXITSTATUS(status);
  ASSERT_TRUE(std::filesystem::exists(db + "-shm"));
  ASSERT_GT(std::filesystem::file_size(db + "-wal"), 32u);
  // The kill landing after the log's header was written and before its first frame (as in
  // RunUpgrade.AnUpgradeKilledAtAnyMomentLeavesTheOldRunOrTheWholeNewOne under load): the
  // header alone.
  std::filesystem::resize_file(db + "-wal", 32);
  EXPECT_EQ(internal::check_wal_file(db + "-wal").frames, 0);
  EXPECT_FALSE(internal::wal_index_in_use(db + "-shm"));
  const auto start = std::chrono::steady_clock::now();
  int reads = 0;
  while (reads < 10 && std::chrono::steady_clock::now() - start < std::chrono::seconds(20)) {
    RunReader r(dir);
    EXPECT_EQ(r.step_count(), 3);
    EXPECT_EQ(r.for_each([](const Record&) {}), 3);
    ++reads;
  }
  EXPECT_EQ(reads, 10);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gradscope
