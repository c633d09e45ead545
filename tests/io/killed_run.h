// Runs left as a crash leaves them (run.db with its -wal and -shm), the bytes of a folder, and
// what SQLite itself shows of a database and log: the test helpers of the read-only reader.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "gradscope/io/store/run_writer.h"
#include "store_test_util.h"

namespace gradscope::test {

/// Writes `steps` steps of `nodes` records in a child process, each step its own transaction,
/// then kills the child with SIGKILL before it closes the run: run.db-wal and run.db-shm stay.
inline void write_killed_run(const std::filesystem::path& dir, int steps, int nodes) {
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    try {
      RunWriter w(dir.string());
      for (int step = 0; step < steps; ++step) {
        for (int n = 0; n < nodes; ++n) w.add(Record{step, node_name(n), Site::kParamGrad, stats_for(step, n)});
        w.commit();
      }
      raise(SIGKILL);  // before `w` goes out of scope and closes the run
    } catch (...) {
      _exit(3);
    }
    _exit(4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "writer exited with " << WEXITSTATUS(status);
  ASSERT_TRUE(std::filesystem::exists(dir / "run.db-wal"));
}

inline std::string read_bytes(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_bytes(const std::filesystem::path& file, const std::string& bytes) {
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
}

/// Every file of a folder (recursively) with its bytes: equal snapshots mean nothing changed.
inline std::map<std::string, std::string> snapshot(const std::filesystem::path& dir) {
  std::map<std::string, std::string> files;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir))
    files[e.path().lexically_relative(dir).string()] = e.is_regular_file() ? read_bytes(e.path()) : "<not a file>";
  return files;
}

/// The steps SQLite itself shows for `db` with the log `wal`, read through a copy it may
/// recover read-write: what any SQLite reader sees, independently of gradscope's reader.
inline int64_t sqlite_step_count(const std::filesystem::path& db, const std::string& wal) {
  const auto dir = fresh_dir("sqlite-truth");
  std::filesystem::copy_file(db, dir / "run.db");
  write_bytes(dir / "run.db-wal", wal);
  sqlite3* h = nullptr;
  int64_t n = -1;
  if (sqlite3_open((dir / "run.db").c_str(), &h) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(h, "SELECT count(*) FROM steps", -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
  }
  sqlite3_close(h);
  std::filesystem::remove_all(dir);
  return n;
}

}  // namespace gradscope::test
