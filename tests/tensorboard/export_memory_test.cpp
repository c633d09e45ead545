// `gradscope export --format tensorboard` streams: its peak memory over a 100k-step run is
// that of a 2k-step one plus little (getrusage of the child), not proportional to the run.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "decode.h"

namespace gradscope::tensorboard {
namespace {

// Runs argv with stdout and stderr to /dev/null; returns (exit code, peak RSS in KiB).
std::pair<int, long> run_measured(const std::vector<std::string>& args) {
  const pid_t pid = fork();
  if (pid == 0) {
    // Under AddressSanitizer (make test-sanitize) freed memory waits in a quarantine of up to
    // 256 MB, so peak RSS would follow what was ever allocated rather than what is held.
    const char* asan = std::getenv("ASAN_OPTIONS");
    const std::string options = std::string(asan && *asan ? std::string(asan) + ":" : "") +
                                "quarantine_size_mb=0:thread_local_quarantine_size_kb=0";
    setenv("ASAN_OPTIONS", options.c_str(), 1);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    std::vector<char*> argv;
    for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, usage.ru_maxrss};
}

long export_peak_kib(const std::string& dir, int64_t steps, std::string* event_file) {
  const std::string run = dir + "/run" + std::to_string(steps),
                    tb = dir + "/tb" + std::to_string(steps);
  EXPECT_EQ(
      run_measured({GRADSCOPE_TB_FIXTURE, "long", run, "--steps", std::to_string(steps)}).first, 0);
  const auto [code, peak] =
      run_measured({GRADSCOPE_CLI, "export", run, "--format", "tensorboard", "-o", tb});
  EXPECT_EQ(code, 0);
  *event_file = test::only_event_file(tb);
  return peak;
}

TEST(ExportMemory, HundredThousandStepsInBoundedMemory) {
  const std::string dir = test::fresh_folder("memory");
  std::string small_file, large_file;
  const long small = export_peak_kib(dir, 2000, &small_file);
  const long large = export_peak_kib(dir, 100000, &large_file);
  // 100k steps are 400k records: held at once they would take 60 MB (sizeof(Record) and the
  // node string), their events some 100 MB. Streaming keeps one step; what still grows is the
  // report's set of step numbers (a few MB).
  EXPECT_LT(large - small, 16 * 1024)
      << "peak RSS " << small << " KiB for 2k steps, " << large << " KiB for 100k";
  const test::Decoded d = test::decode_file(large_file);
  ASSERT_EQ(d.problem, "");
  ASSERT_EQ(d.events.size(), 1u + 100000u + 1u);  // file version, one per step, the report text
  for (int64_t i = 0; i < 100000; ++i)
    ASSERT_EQ(d.events[static_cast<std::size_t>(i) + 1].step(), i);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gradscope::tensorboard
