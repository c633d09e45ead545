// Readers racing a live writer in another process: every read in the writer's first moments
// and while it writes (its log restarting after checkpoints included) succeeds and shows the
// committed steps exactly, never a frame being appended taken for damage.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gradscope/core/error.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "killed_run.h"
#include "store/internal/wal_check.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using test::fresh_dir;
using test::node_name;
using test::same_stats;
using test::stats_for;

struct Tally {
  std::mutex mu;
  int reads = 0;
  int early = 0;  // reads in a writer's first moments (its first second, a run's first reads)
  std::vector<std::string> failures;
};

// One read of the run as every command starts: open, count the committed steps, then read
// the records of the last `tail` of them (all of them when `tail` is 0) and check each.
void read_once(const std::string& dir, int nodes, Tally& tally, bool early, int64_t tail = 8) {
  std::string failure;
  try {
    RunReader r(dir);
    const int64_t steps = r.step_count();
    const int64_t first = tail == 0 ? 0 : std::max<int64_t>(0, steps - tail);
    int64_t expect = first;
    int in_step = 0;
    r.for_each([&](const Record& rec) {
      if (in_step == nodes) {
        ++expect;
        in_step = 0;
      }
      if (rec.step != expect) throw Error("step " + std::to_string(rec.step) + " where " + std::to_string(expect) + " belongs");
      if (rec.node != node_name(in_step) || !same_stats(rec.stats, stats_for(rec.step, in_step)))
        throw Error("step " + std::to_string(rec.step) + ": record " + std::to_string(in_step) + " differs");
      ++in_step;
    }, StepRange{first, steps - 1});
    if (steps > 0 && (expect != steps - 1 || in_step != nodes))
      throw Error(std::to_string(steps) + " steps committed, read up to step " + std::to_string(expect) + " with " +
                  std::to_string(in_step) + " records");
  } catch (const std::exception& e) {
    failure = e.what();
  }
  std::lock_guard<std::mutex> lock(tally.mu);
  ++tally.reads;
  if (early) ++tally.early;
  if (!failure.empty()) tally.failures.push_back(failure);
}

// A writer in a child process: steps of `nodes` records, each committed, until the parent
// closes its end of the pipe `stop` (or kHangGuard passes); its log passes SQLite's checkpoint size
// (1000 pages) many times over, so it restarts.
constexpr auto kHangGuard = std::chrono::seconds(120);

pid_t start_writer(const fs::path& dir, int nodes, const int stop[2]) {
  const pid_t pid = fork();
  if (pid != 0) return pid;
  close(stop[1]);  // the parent's end: only the parent's copy may keep it open
  try {
    const auto until = std::chrono::steady_clock::now() + kHangGuard;
    RunWriter w(dir.string());
    pollfd parent{stop[0], POLLIN, 0};
    for (int step = 0; std::chrono::steady_clock::now() < until; ++step) {
      for (int n = 0; n < nodes; ++n) w.add(Record{step, node_name(n), Site::kParamGrad, stats_for(step, n)});
      w.commit();
      if (poll(&parent, 1, 0) > 0) break;  // the parent closed its end: enough reads
    }
    w.close();
  } catch (...) {
    _exit(3);
  }
  _exit(0);
}

// Counted, never timed: each run lasts until its readers have read kEarly times in the writer's
// first moments and kLate times after them, however slow the machine (CI runs beside other
// work; a bound on reads per second failed there once, docs/reliability.md).
TEST(LiveRead, ReadersNeverTakeAFrameBeingWrittenForDamage) {
  constexpr int kRuns = 8, kReaders = 3, kNodes = 96, kEarly = 50, kLate = 20;
  Tally tally;
  for (int run = 0; run < kRuns; ++run) {
    const fs::path dir = fresh_dir("live-" + std::to_string(run));
    int stop[2];
    ASSERT_EQ(pipe(stop), 0);
    const auto started = std::chrono::steady_clock::now();
    const pid_t writer = start_writer(dir, kNodes, stop);
    ASSERT_GT(writer, 0);
    close(stop[0]);
    // A run's first moments: its writer's first second, and at least its first kEarly reads.
    std::atomic<int> run_reads{0}, run_late{0};
    std::atomic<bool> writing{true};
    std::vector<std::thread> readers;
    for (int i = 0; i < kReaders; ++i)
      readers.emplace_back([&] {
        while (writing) {
          if (!fs::exists(dir / "run.db")) continue;
          const bool early = run_reads++ < kEarly || std::chrono::steady_clock::now() - started < std::chrono::seconds(1);
          read_once(dir.string(), kNodes, tally, early);
          if (!early) ++run_late;
        }
      });
    while (run_late < kLate && std::chrono::steady_clock::now() - started < kHangGuard)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    close(stop[1]);  // the writer stops after its next commit
    int status = 0;
    ASSERT_EQ(waitpid(writer, &status, 0), writer);
    writing = false;
    for (std::thread& t : readers) t.join();
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    ASSERT_GE(run_late, kLate) << "run " << run << ": the readers did not reach " << kLate << " reads in "
                               << kHangGuard.count() << " s";
    const std::size_t failed = tally.failures.size();
    read_once(dir.string(), kNodes, tally, false, 0);  // the closed run reads whole
    ASSERT_EQ(tally.failures.size(), failed) << tally.failures.back();
    fs::remove_all(dir);
  }
  std::string first;
  for (std::size_t i = 0; i < tally.failures.size() && i < 5; ++i) first += "\n  " + tally.failures[i];
  EXPECT_TRUE(tally.failures.empty()) << tally.failures.size() << " of " << tally.reads << " reads failed:" << first;
  std::cout << tally.reads << " reads, " << tally.early << " in a writer's first moments, "
            << tally.failures.size() << " failed\n";
  EXPECT_GE(tally.early, kRuns * kEarly);
}

// A writer in a child process that commits `steps` steps and then waits, its run open, until
// it is killed: a live writer held still.
struct PausedWriter {
  pid_t pid = -1;
  PausedWriter(const fs::path& dir, int steps, int nodes) {
    int ready[2];
    if (pipe(ready) != 0) return;
    pid = fork();
    if (pid == 0) {
      close(ready[0]);
      RunWriter w(dir.string());
      for (int step = 0; step < steps; ++step) {
        for (int n = 0; n < nodes; ++n) w.add(Record{step, node_name(n), Site::kParamGrad, stats_for(step, n)});
        w.commit();
      }
      const char ok = 1;
      if (write(ready[1], &ok, 1) != 1) _exit(3);
      for (;;) pause();
    }
    close(ready[1]);
    char ok = 0;
    if (read(ready[0], &ok, 1) != 1) pid = -1;
    close(ready[0]);
  }
  void kill_now() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
  ~PausedWriter() { kill_now(); }
};

TEST(LiveRead, ALiveWritersIndexListsItsCommittedFrames) {
  const fs::path dir = fresh_dir("live-index");
  const std::string db = (dir / "run.db").string();
  PausedWriter writer(dir, 30, 16);
  ASSERT_GT(writer.pid, 0);
  EXPECT_TRUE(internal::wal_index_in_use(db + "-shm"));
  const internal::WalCheck log = internal::check_wal(test::read_bytes(db + "-wal"));
  const internal::WalIndex index = internal::read_wal_index(db + "-shm");
  ASSERT_TRUE(index.valid);
  EXPECT_GT(log.frames, 30);
  EXPECT_EQ(index.committed_frames, log.frames);  // every frame committed, the writer idle
  EXPECT_EQ(index.salt1, log.salt1);
  EXPECT_EQ(index.salt2, log.salt2);
  EXPECT_EQ(internal::check_wal(test::read_bytes(db + "-wal"), 5).frames, 5);
  writer.kill_now();
  EXPECT_FALSE(internal::wal_index_in_use(db + "-shm"));  // nobody holds it now
  EXPECT_FALSE(internal::wal_index_in_use(db + "-missing"));
  EXPECT_FALSE(internal::read_wal_index(db + "-missing").valid);
  test::write_bytes(dir / "short-shm", std::string(50, '\0'));
  EXPECT_FALSE(internal::read_wal_index((dir / "short-shm").string()).valid);
  fs::remove_all(dir);
}

TEST(LiveRead, LookingAtTheIndexKeepsThisProcesssLocksOnIt) {
  // Closing any descriptor of a file drops every POSIX lock the process holds on it: a check
  // that opened and closed run.db-shm would take the live writer's locks in this very process.
  const fs::path dir = fresh_dir("live-own-locks");
  const std::string shm = (dir / "run.db-shm").string();
  RunWriter w(dir.string());
  for (int step = 0; step < 3; ++step) {
    w.add(Record{step, node_name(0), Site::kParamGrad, stats_for(step, 0)});
    w.commit();
  }
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(internal::wal_index_in_use(shm));  // this process's own lock counts
    EXPECT_TRUE(internal::read_wal_index(shm).valid);
  }
  const pid_t child = fork();
  if (child == 0) _exit(internal::wal_index_in_use(shm) ? 0 : 1);  // another process sees our lock
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "this process's lock on the index was dropped";
  w.close();
  RunReader r(dir.string());
  EXPECT_EQ(r.step_count(), 3);
  fs::remove_all(dir);
}

TEST(LiveRead, AFrameBeingWrittenIsNotDamageButDamageToACommittedOneIs) {
  const fs::path dir = fresh_dir("live-frames");
  const fs::path wal = dir / "run.db-wal";
  PausedWriter writer(dir, 30, 16);
  ASSERT_GT(writer.pid, 0);
  const std::string committed = test::read_bytes(wal);
  const internal::WalCheck log = internal::check_wal(committed);
  // A frame of this log after the committed ones whose checksum does not verify: what a
  // reader sees of a frame being written.
  std::string frame(24 + log.page_size, '\x5a');
  frame.replace(8, 8, committed.substr(16, 8));  // the log's salts
  test::write_bytes(wal, committed + frame);
  {
    RunReader r(dir.string());
    EXPECT_EQ(r.step_count(), 30);
  }
  std::string flipped = committed + frame;
  flipped[32 + 24 + 100] ^= 0x10;  // the data of the first frame, which is committed
  test::write_bytes(wal, flipped);
  try {
    RunReader r(dir.string());
    ADD_FAILURE() << "damage to a committed frame of a live log was not reported";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fail their checksum"), std::string::npos) << e.what();
  }
  test::write_bytes(wal, committed);
  writer.kill_now();
  RunReader r(dir.string());
  EXPECT_EQ(r.step_count(), 30);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradscope
