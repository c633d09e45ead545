// The run tool links no LibTorch and no XGBoost (issue 15): loading LibTorch's libraries took
// most of `gradscope report`'s time. The shared libraries are read with ldd, which lists every
// library the loader maps, the ones pulled in by other libraries too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli_process.h"
#include "run_cli.h"

namespace {

using ::testing::Contains;
using ::testing::HasSubstr;

// The file names of the shared libraries `binary` loads ("libc.so.6", ...), from `ldd`.
std::vector<std::string> shared_libraries(const std::string& binary) {
  const std::filesystem::path dir = gradscope::test::fresh_dir("ldd");
  const std::string cmd = "ldd '" + binary + "' >" + (dir / "out").string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  const std::string text = gradscope::test::slurp(dir / "out");
  std::filesystem::remove_all(dir);
  EXPECT_EQ(status, 0) << cmd << ":\n" << text;
  // Lines: "\tlibfmt.so.9 => /lib/.../libfmt.so.9 (0x...)", "\t/lib64/ld-linux.so.2 (0x...)".
  std::vector<std::string> names;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string first;
    if (!(words >> first)) continue;
    names.push_back(std::filesystem::path(first).filename().string());
  }
  return names;
}

// The names among `libraries` that belong to LibTorch (libtorch*, libc10*) or XGBoost.
std::vector<std::string> framework_libraries(const std::vector<std::string>& libraries) {
  std::vector<std::string> found;
  for (const std::string& name : libraries)
    for (const char* prefix : {"libtorch", "libc10", "libxgboost"})
      if (name.rfind(prefix, 0) == 0) found.push_back(name);
  return found;
}

TEST(Link, RunToolLoadsNoLibTorchAndNoXGBoost) {
  const std::vector<std::string> libraries = shared_libraries(GRADSCOPE_CLI);
  ASSERT_THAT(libraries, Contains("libc.so.6")) << "ldd's output was not read";
  EXPECT_EQ(framework_libraries(libraries), std::vector<std::string>{});
}

// The check itself sees LibTorch and XGBoost where they are: in the demo.
TEST(Link, DemoLoadsLibTorchAndXGBoost) {
  const std::vector<std::string> found = framework_libraries(shared_libraries(GRADSCOPE_DEMO));
  EXPECT_THAT(found, Contains(HasSubstr("libtorch_cpu")));
  EXPECT_THAT(found, Contains(HasSubstr("libc10")));
  EXPECT_THAT(found, Contains(HasSubstr("libxgboost")));
}

}  // namespace
