// Every command that reads a run leaves its files byte-identical, also when it may not grow
// any file (as on a full disk), and a damaged log is exit 3 naming it, or read with --partial.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <csignal>
#include <cstdlib>
#include <sstream>
#include <vector>

#include "../io/killed_run.h"
#include "gradscope/io/store/run_writer.h"
#include "store/internal/wal_check.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using gradscope::test::read_bytes;
using gradscope::test::snapshot;

struct Result {
  int code;
  std::string out, err;
};

// Runs gradscope with `args` (split at spaces) in a child that may not grow any file (as on
// a full disk: RLIMIT_FSIZE 0, SIGXFSZ ignored so a write fails instead of killing it), its
// stdout and stderr captured through pipes.
Result run_without_growth(const std::string& args) {
  std::vector<std::string> words{GRADSCOPE_CLI};
  std::istringstream in(args);
  for (std::string w; in >> w;) words.push_back(w);
  int out[2], err[2];
  if (pipe(out) != 0 || pipe(err) != 0) return {-1, "", "pipe failed"};
  const pid_t pid = fork();
  if (pid == 0) {
    const rlimit no_growth{0, 0};
    setrlimit(RLIMIT_FSIZE, &no_growth);
    signal(SIGXFSZ, SIG_IGN);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {out[0], out[1], err[0], err[1]}) close(fd);
    std::vector<char*> argv;
    for (std::string& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  Result r{-1, "", ""};
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  for (int open = 2; open > 0;) {
    if (poll(fds, 2, -1) < 0) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP))) continue;
      char buf[65536];
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? r.out : r.err).append(buf, static_cast<std::size_t>(n));
      } else {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open;
      }
    }
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

void write_closed_run(const fs::path& dir, int steps) {
  gradscope::RunWriter w(dir.string());
  for (int step = 0; step < steps; ++step)
    for (int n = 0; n < 3; ++n)
      w.add(gradscope::Record{step, gradscope::test::node_name(n), gradscope::Site::kParamGrad,
                              gradscope::test::stats_for(step, n)});
}

TEST(CliReadOnly, EveryReadingCommandLeavesTheRunsByteIdentical) {
  const fs::path root = gradscope::test::fresh_dir("cli-ro");
  const fs::path killed = root / "killed", closed = root / "closed";
  gradscope::test::write_killed_run(killed, 30, 4);
  write_closed_run(closed, 20);
  const auto before = snapshot(root);
  const std::string k = killed.string(), c = closed.string();
  for (const std::string& args :
       {"report " + k, "report " + k + " --json", "report " + k + " --csv", "report " + c, "report " + c + " --partial",
        "export " + k + " --format json", "export " + k + " --format csv", "export " + k + " --format jsonl",
        "animate " + k, "diff " + c + " " + k, "ls " + root.string(),
        "html " + k + " -o /dev/stdout"}) {
    SCOPED_TRACE(args);
    const Result r = run_without_growth(args);
    EXPECT_TRUE(r.code == 0 || r.code == 1) << r.code << ": " << r.err;
    EXPECT_THAT(r.err, testing::Not(HasSubstr("error")));
    EXPECT_FALSE(r.out.empty());
    EXPECT_EQ(snapshot(root), before);
  }
  fs::remove_all(root);
}

TEST(CliReadOnly, ADamagedLogExitsThreeNamingItAndPartialSaysWhatWasLost) {
  const fs::path dir = gradscope::test::fresh_dir("cli-ro-damaged");
  gradscope::test::write_killed_run(dir, 50, 8);
  std::string wal = read_bytes(dir / "run.db-wal");
  const auto clean = gradscope::internal::check_wal(wal);
  const int64_t from = 32 + (clean.frames / 2) * (24 + clean.page_size);
  wal[static_cast<std::size_t>(from + 500)] ^= 0x01;
  gradscope::test::write_bytes(dir / "run.db-wal", wal);
  const auto before = snapshot(dir);
  const std::string log = "run log '" + (dir / "run.db-wal").string() + "': ";

  const Result strict = run_without_growth("report " + dir.string() + " --json");
  EXPECT_EQ(strict.code, 3);
  EXPECT_THAT(strict.err, HasSubstr("gradscope: error: " + log));
  EXPECT_THAT(strict.err, HasSubstr("frames from byte " + std::to_string(from) + " fail their checksum"));
  EXPECT_THAT(strict.err, HasSubstr("use --partial"));
  EXPECT_EQ(strict.out, "");

  const Result partial = run_without_growth("report " + dir.string() + " --json --partial");
  EXPECT_TRUE(partial.code == 0 || partial.code == 1) << partial.err;
  EXPECT_THAT(partial.err, HasSubstr("gradscope: warning: " + log));
  EXPECT_THAT(partial.err, HasSubstr("only the steps committed before them are read"));
  const int64_t kept = gradscope::test::sqlite_step_count(dir / "run.db", wal);
  EXPECT_THAT(partial.out, HasSubstr("\"frames\": " + std::to_string(kept)));
  EXPECT_EQ(snapshot(dir), before) << "the damaged log is evidence: it must survive the read";
  fs::remove_all(dir);
}

}  // namespace
