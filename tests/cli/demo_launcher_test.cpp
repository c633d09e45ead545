// `gradscope demo` runs gradscope-demo from gradscope's own folder in gradscope's place (execv):
// the process the caller started becomes the demo, so signals reach it; without the demo
// executable the error names the path it looked at.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "run_cli.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// The executable process `pid` runs now ("" once it is gone).
std::string executable_of(pid_t pid) {
  std::error_code error;
  return fs::read_symlink("/proc/" + std::to_string(pid) + "/exe", error).string();
}

TEST(DemoLauncher, TheStartedProcessBecomesTheDemoAndItsSignalIsTheExitStatus) {
  const fs::path dir = gradscope::test::fresh_dir("demo-exec");
  // The demo opens digits.csv first: a FIFO no one writes to holds it there, alive, with no data.
  ASSERT_EQ(mkfifo((dir / "digits.csv").c_str(), 0600), 0);
  const std::string data_dir = dir.string(), out_dir = (dir / "out").string();
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    execl(GRADSCOPE_CLI, GRADSCOPE_CLI, "demo", "--data-dir", data_dir.c_str(), "--out",
          out_dir.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::string exe = executable_of(pid);
  while (fs::path(exe).filename() != "gradscope-demo" &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    exe = executable_of(pid);
  }
  EXPECT_EQ(fs::path(exe), fs::path(GRADSCOPE_DEMO));
  kill(pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << "status " << status;
  fs::remove_all(dir);
}

TEST(DemoLauncher, WithoutTheDemoExecutableExitThreeNamingIt) {
  const fs::path dir = gradscope::test::fresh_dir("demo-missing");
  fs::copy_file(GRADSCOPE_CLI, dir / "gradscope");
  const std::string line = (dir / "gradscope").string() + " demo --quick >" +
                           (dir / "out").string() + " 2>" + (dir / "err").string() + " </dev/null";
  const int status = std::system(line.c_str());
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_EQ(gradscope::test::slurp(dir / "out"), "");
  EXPECT_THAT(gradscope::test::slurp(dir / "err"),
              HasSubstr("gradscope: error: the demo executable '" +
                        (dir / "gradscope-demo").string() + "' is missing"));
  // The run tool's own commands still work on their own.
  EXPECT_EQ(std::system(((dir / "gradscope").string() + " --version >/dev/null").c_str()), 0);
  fs::remove_all(dir);
}

}  // namespace
