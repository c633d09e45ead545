// `gradscope demo` in the run tool. The demo trains with LibTorch and XGBoost, whose libraries
// took most of a report's time to load, so it is an executable of its own, gradscope-demo,
// built beside gradscope. This replaces the gradscope process with it (execv), argv unchanged:
// the demo parses the very words the user typed, records the same command line in its runs,
// and its output, exit code and signals reach the caller as if gradscope had run them.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>

#include "cli_main.h"
#include "commands.h"

namespace gradscope::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDemoExecutable = "gradscope-demo";

// Beside the running binary, found through /proc/self/exe: right however gradscope was started
// (a relative path, PATH, a symbolic link to it).
fs::path demo_executable() {
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error);
  if (error) throw Error("cannot find the demo: /proc/self/exe: " + error.message());
  return self.parent_path() / kDemoExecutable;
}

[[noreturn]] void run_demo_executable() {
  const fs::path demo = demo_executable();
  std::cout.flush();  // nothing is written before the demo starts; an exec drops what is buffered
  std::fflush(stdout);
  execv(demo.c_str(), main_arguments());
  const int cause = errno;
  if (cause == ENOENT)
    throw Error("the demo executable '" + demo.string() + "' is missing (it needs LibTorch: " +
                "configure with GRADSCOPE_BUILD_TORCH=ON and build the target gradscope_demo)");
  throw Error("cannot run the demo executable '" + demo.string() + "': " + std::strerror(cause));
}

}  // namespace

void add_demo_command(CLI::App& app, int& /*exit_code*/) {
  CLI::App* cmd = app.add_subcommand("demo", kDemoSummary);
  // Every word after `demo`, --help included, is the demo's to read: it parses argv itself.
  cmd->prefix_command();
  cmd->set_help_flag();
  cmd->callback(run_demo_executable);
}

}  // namespace gradscope::cli
