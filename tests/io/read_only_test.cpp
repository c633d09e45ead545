// The reader never writes: a run reads the same without write access, every file is
// byte-identical afterwards, a damaged log is reported instead of silently shortening the run,
// and a run being created is never seen without its schema.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <atomic>
#include <cstdlib>
#include <functional>
#include <thread>

#include "../common/error_of.h"
#include "gradscope/io/store/run_reader.h"
#include "store/internal/wal_check.h"
#include "killed_run.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::error_of;
using test::fresh_dir;
using test::node_name;
using test::read_bytes;
using test::snapshot;
using test::stats_for;

void write_closed_run(const fs::path& dir, int steps, int nodes) {
  RunWriter w(dir.string());
  for (int step = 0; step < steps; ++step)
    for (int n = 0; n < nodes; ++n) w.add(Record{step, node_name(n), Site::kParamGrad, stats_for(step, n)});
  w.close();
}

// Steps and records the reader delivers; throws what the reader throws.
std::pair<int64_t, int64_t> read_counts(const std::string& run, bool partial = false) {
  RunReader r(run, ReadOptions{partial});
  int64_t records = 0;
  const int64_t steps = r.for_each([&](const Record&) { ++records; });
  r.refresh_metadata();
  r.step_count();
  return {steps, records};
}

TEST(ReadOnly, ReadingAClosedRunChangesNoFileAndCreatesNone) {
  const fs::path dir = fresh_dir("ro-closed");
  write_closed_run(dir, 20, 4);
  const auto before = snapshot(dir);
  EXPECT_EQ(read_counts(dir.string()), std::make_pair(int64_t{20}, int64_t{80}));
  EXPECT_EQ(snapshot(dir), before);
  fs::remove_all(dir);
}

TEST(ReadingAKilledRun, ChangesNothingAndSeesEveryCommittedStep) {
  const fs::path dir = fresh_dir("ro-killed");
  test::write_killed_run(dir, 40, 6);
  const auto before = snapshot(dir);
  ASSERT_EQ(before.count("run.db-wal"), 1u);
  ASSERT_EQ(before.count("run.db-shm"), 1u);
  EXPECT_EQ(read_counts(dir.string()), std::make_pair(int64_t{40}, int64_t{240}));
  EXPECT_EQ(read_counts(dir.string()), std::make_pair(int64_t{40}, int64_t{240})) << "a second read sees the same";
  EXPECT_EQ(snapshot(dir), before) << "the log was checkpointed, deleted or its index rewritten";
  fs::remove_all(dir);
}

TEST(ReadingAKilledRun, ALogWithoutItsIndexIsReadFromAPrivateCopyThatIsRemoved) {
  const fs::path dir = fresh_dir("ro-noshm"), tmp = fresh_dir("ro-noshm-tmp");
  test::write_killed_run(dir, 30, 5);
  fs::remove(dir / "run.db-shm");
  const auto before = snapshot(dir);
  const char* old_tmp = std::getenv("TMPDIR");
  const std::string saved = old_tmp ? old_tmp : "";
  setenv("TMPDIR", tmp.c_str(), 1);
  EXPECT_EQ(read_counts(dir.string()), std::make_pair(int64_t{30}, int64_t{150}));
  old_tmp ? setenv("TMPDIR", saved.c_str(), 1) : unsetenv("TMPDIR");
  EXPECT_EQ(snapshot(dir), before);
  EXPECT_TRUE(fs::is_empty(tmp)) << "the private copy was left behind";
  fs::remove_all(dir);
  fs::remove_all(tmp);
}

TEST(ADamagedLog, IsAnErrorNamingTheLogAndPartialReadsWhatSqliteKeeps) {
  const fs::path dir = fresh_dir("ro-damaged");
  test::write_killed_run(dir, 60, 16);
  const fs::path log = dir / "run.db-wal";
  std::string wal = read_bytes(log);
  const internal::WalCheck clean = internal::check_wal(wal);
  const int64_t bad = clean.frames / 2, frame_bytes = 24 + clean.page_size;
  const int64_t from = 32 + bad * frame_bytes;
  wal[static_cast<std::size_t>(from + 24 + 7)] ^= 0x20;
  test::write_bytes(log, wal);
  const auto before = snapshot(dir);

  const std::string e = error_of([&] { read_counts(dir.string()); });
  EXPECT_THAT(e, HasSubstr("run log '" + log.string() + "': " + std::to_string(clean.frames - bad) +
                           " frames from byte " + std::to_string(from) + " fail their checksum"));
  EXPECT_THAT(e, HasSubstr("--partial"));

  const int64_t kept = test::sqlite_step_count(dir / "run.db", wal);  // SQLite's own reading
  ASSERT_GT(kept, 0);
  ASSERT_LT(kept, 60);
  RunReader partial(dir.string(), ReadOptions{true});
  EXPECT_EQ(partial.for_each([](const Record&) {}), kept);
  ASSERT_EQ(partial.warnings().size(), 1u);
  EXPECT_THAT(partial.warnings()[0], HasSubstr(std::to_string(clean.frames - bad) + " frames from byte " +
                                               std::to_string(from)));
  EXPECT_THAT(partial.warnings()[0], HasSubstr("only the steps committed before them are read"));
  EXPECT_EQ(snapshot(dir), before);
  fs::remove_all(dir);
}

// Runs `body` in a forked child and returns the message it gives back ("" for none), or why
// the child could not run or died.
std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    const std::string message = body();
    if (!message.empty() && write(fds[1], message.data(), message.size()) < 0) _exit(2);
    _exit(0);
  }
  close(fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) > 0;) message.append(buf, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "child died with signal " + std::to_string(WTERMSIG(status));
  return message;
}

// In a child: as user nobody when this test runs as root (who passes every permission check).
// "" when it could, else why not.
std::string become_nobody_if_root() {
  if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return "setuid failed";
  return "";
}

// Runs `read` in a child without write access to anything: as user nobody when this test
// runs as root (who may write anywhere), else with the run made read-only; and with a file
// size limit of 0, so any write that grows a file fails as on a full disk. Returns the
// child's message: "" when it read what was expected.
std::string read_without_write_access(const fs::path& dir, int64_t steps) {
  return in_child([&]() -> std::string {
    signal(SIGXFSZ, SIG_IGN);
    const rlimit no_growth{0, 0};
    if (setrlimit(RLIMIT_FSIZE, &no_growth) != 0) return "setrlimit failed";
    if (std::string why = become_nobody_if_root(); !why.empty()) return why;
    try {
      const auto got = read_counts(dir.string());
      if (got.first != steps) return "read " + std::to_string(got.first) + " steps";
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  });
}

void make_read_only(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    fs::permissions(e.path(), fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                    fs::perm_options::remove);
  fs::permissions(dir, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec);
  fs::permissions(dir, fs::perms::owner_write, fs::perm_options::remove);
}

TEST(ReadOnly, ClosedAndKilledRunsReadWithoutWriteAccessOrDiskSpace) {
  const fs::path closed = fresh_dir("ro-perm-closed"), killed = fresh_dir("ro-perm-killed");
  write_closed_run(closed, 12, 3);
  test::write_killed_run(killed, 25, 3);
  for (const fs::path& dir : {closed, killed}) {
    SCOPED_TRACE(dir);
    make_read_only(dir);
    const auto before = snapshot(dir);
    EXPECT_EQ(read_without_write_access(dir, dir == closed ? 12 : 25), "");
    EXPECT_EQ(snapshot(dir), before);
    fs::permissions(dir, fs::perms::owner_all, fs::perm_options::add);
    fs::remove_all(dir);
  }
}

// A run this user may not reach (a 0700 folder of another user; a folder without search
// permission) is said to be that, not "no such file", which sends a user looking elsewhere.
TEST(ReadOnly, ARunBehindAFolderThisUserMayNotEnterIsPermissionDenied) {
  const fs::path dir = fresh_dir("ro-denied");
  write_closed_run(dir / "run", 3, 2);
  // Root passes every permission check: the child reads as nobody, the folder 0700 root's.
  // Another user owns the folder and reads it with no permission at all on it.
  fs::permissions(dir, geteuid() == 0 ? fs::perms::owner_all : fs::perms::none);
  const std::string message = in_child([&]() -> std::string {
    if (std::string why = become_nobody_if_root(); !why.empty()) return why;
    try {
      RunReader reader((dir / "run").string());
    } catch (const std::exception& e) {
      return e.what();
    }
    return "read without an error";
  });
  EXPECT_EQ(message, "run database '" + (dir / "run" / "run.db").string() +
                         "': permission denied (this user may not open it or a folder above it)");
  fs::permissions(dir, fs::perms::owner_all);
  fs::remove_all(dir);
}

TEST(ReadOnly, AReaderOpenedBeforeTheFirstCommitFollowsTheLog) {
  const fs::path dir = fresh_dir("ro-follow");
  RunWriter w(dir.string());
  RunReader r(dir.string());
  EXPECT_EQ(r.for_each([](const Record&) {}), 0);
  for (int step = 0; step < 5; ++step) w.add(Record{step, node_name(0), Site::kParamGrad, stats_for(step, 0)});
  w.commit();
  r.refresh_metadata();
  EXPECT_EQ(r.for_each([](const Record&) {}), 5);
  w.close();
  r.refresh_metadata();
  EXPECT_NE(r.metadata().end_time, "");
  fs::remove_all(dir);
}

TEST(ReadOnly, ARunBeingCreatedIsNeverSeenWithoutItsSchema) {
  const fs::path root = fresh_dir("ro-create");
  std::vector<std::string> errors;
  for (int i = 0; i < 40; ++i) {
    const fs::path dir = root / std::to_string(i);
    std::atomic<bool> stop{false};
    std::thread reader([&] {
      // Opens the run the moment run.db appears.
      while (!stop && !fs::exists(dir / "run.db")) {
      }
      if (stop) return;
      try {
        RunReader r(dir.string());
      } catch (const Error& e) {
        errors.push_back(e.what());
      }
    });
    { RunWriter w(dir.string()); }
    stop = true;
    reader.join();
  }
  EXPECT_EQ(errors, std::vector<std::string>{});
  fs::remove_all(root);
}

}  // namespace
}  // namespace gradscope
