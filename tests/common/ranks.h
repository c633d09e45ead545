// Worker processes for the many-process tests and benchmark: the program runs itself again
// (fork + exec, so no LibTorch thread state crosses the fork) as
// `<program> --rank-worker <scenario> <rank> <world> <dir> [args...]`, and each worker joins
// one Gloo group on loopback through a FileStore in <dir>.
//
//   if (argc > 1 && std::string(argv[1]) == "--rank-worker") return run_worker(argc, argv);
//   auto pids = gradscope::test::start_workers("merge", 4, dir);
//   auto codes = gradscope::test::wait_workers(pids, 60);   // exit codes, rank order
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gradscope::test {

inline constexpr const char* kRankWorker = "--rank-worker";

/// A fresh directory under the system's temp directory.
inline std::string make_temp_dir(const std::string& prefix) {
  std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
  if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
  return pattern;
}

/// A make_temp_dir() directory, removed with everything in it when this goes.
struct TempDir {
  explicit TempDir(const std::string& prefix) : path(make_temp_dir(prefix)) {}
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string path;
};

/// Starts `world` workers of this program running `scenario`; their pids in rank order.
inline std::vector<pid_t> start_workers(const std::string& scenario, int world, const std::string& dir,
                                        const std::vector<std::string>& extra = {}) {
  std::vector<pid_t> pids;
  for (int rank = 0; rank < world; ++rank) {
    std::vector<std::string> args = {"/proc/self/exe", kRankWorker, scenario, std::to_string(rank),
                                     std::to_string(world), dir};
    args.insert(args.end(), extra.begin(), extra.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      execv("/proc/self/exe", argv.data());
      _exit(127);
    }
    pids.push_back(pid);
  }
  return pids;
}

/// Waits up to `limit_s` seconds for every worker, then kills those left; exit codes in rank
/// order (128 + signal for a signalled worker, -1 for one killed here past the limit).
inline std::vector<int> wait_workers(const std::vector<pid_t>& pids, double limit_s) {
  std::vector<int> codes(pids.size(), -2);
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
  std::size_t left = pids.size();
  while (left > 0) {
    for (std::size_t i = 0; i < pids.size(); ++i) {
      if (codes[i] != -2) continue;
      int status = 0;
      if (waitpid(pids[i], &status, WNOHANG) == pids[i]) {
        codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        --left;
      }
    }
    if (left == 0) break;
    if (std::chrono::steady_clock::now() > end) {
      for (std::size_t i = 0; i < pids.size(); ++i)
        if (codes[i] == -2) {
          kill(pids[i], SIGKILL);
          waitpid(pids[i], nullptr, 0);
          codes[i] = -1;
        }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return codes;
}

/// This worker's Gloo group on loopback: a FileStore in `dir`, `timeout` for every collective.
inline c10::intrusive_ptr<c10d::ProcessGroup> make_group(const std::string& dir, int rank, int world,
                                                         std::chrono::milliseconds timeout) {
  auto store = c10::make_intrusive<c10d::FileStore>(dir + "/store", world);
  auto options = c10d::ProcessGroupGloo::Options::create(timeout);
  options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
  // Since LibTorch 2.0 Gloo is a Backend, and a ProcessGroup dispatches to the backend set for
  // the tensors' device (what torch.distributed.init_process_group("gloo") builds).
  auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, options);
  auto group = c10::make_intrusive<c10d::ProcessGroup>(store, rank, world);
  group->setDefaultBackend(c10d::ProcessGroup::BackendType::GLOO);
  group->setBackend(c10::DeviceType::CPU, c10d::ProcessGroup::BackendType::GLOO, gloo);
  return group;
}

}  // namespace gradscope::test
