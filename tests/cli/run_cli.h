// Running the gradscope command from a test: exit code, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "cli_process.h"

namespace gradscope::test {

/// A finished command (cli_process.h), under the name the compress tests use.
using CliResult = Result;

/// An empty folder under the temporary directory, unique to this process.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gradscope-test-" + name + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

/// Runs `gradscope <args>` (GRADSCOPE_CLI) with no input.
inline CliResult run_cli(const std::string& args) {
  const std::filesystem::path dir = fresh_dir("cli-out");
  const std::string cmd = std::string(GRADSCOPE_CLI) + " " + args + " >" + (dir / "out").string() + " 2>" +
                          (dir / "err").string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  CliResult r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
  std::filesystem::remove_all(dir);
  return r;
}

}  // namespace gradscope::test
