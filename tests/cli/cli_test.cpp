// The gradscope command as a user runs it: exit codes, stderr text, and the demo's verdicts.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gradscope/version.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Result {
  int code;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("gradscope-cli-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

Result run(const std::string& args) {
  const fs::path dir = temp_dir("run");
  const std::string cmd = std::string(GRADSCOPE_CLI) + " " + args + " >" + (dir / "out").string() +
                          " 2>" + (dir / "err").string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
  fs::remove_all(dir);
  return r;
}

std::string data_dir() {
  const char* env = std::getenv("GRADSCOPE_DATA_DIR");
  return env ? env : GRADSCOPE_DEFAULT_DATA_DIR;
}

TEST(Cli, HelpGoesToStdoutAndExitsZero) {
  const Result r = run("--help");
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("demo"));
  EXPECT_EQ(r.err, "");
}

TEST(Cli, VersionPrintsTheBuildVersion) {
  const Result r = run("--version");
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, std::string("gradscope ") + gradscope::kVersion + "\n");
}

TEST(Cli, UsageErrorsExitTwoWithAHint) {
  for (const char* args : {"", "--bogus", "nosuchcommand", "demo --steps 0", "demo --steps abc"}) {
    SCOPED_TRACE(args);
    const Result r = run(args);
    EXPECT_EQ(r.code, 2);
    EXPECT_THAT(r.err, StartsWith("gradscope: error: "));
    EXPECT_THAT(r.err, HasSubstr("run 'gradscope --help' for usage"));
  }
}

TEST(Cli, MissingDataExitsThreeNamingTheFile) {
  const Result r = run("demo --data-dir /nonexistent/gradscope-data");
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, StartsWith("gradscope: error: cannot open digits data "
                                "'/nonexistent/gradscope-data/digits.csv'"));
  EXPECT_THAT(r.err, HasSubstr("scripts/fetch-data.sh"));
}

TEST(Cli, MalformedDataExitsThreeNamingTheLine) {
  const fs::path dir = temp_dir("bad-data");
  std::ofstream(dir / "digits.csv") << "0,1,2\n";
  Result r = run("demo --data-dir " + dir.string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("line 1: expected 65 values, found 3"));
  std::string row;
  for (int i = 0; i < 64; ++i) row += "1,";
  std::ofstream(dir / "digits.csv") << row << "x\n";
  r = run("demo --data-dir " + dir.string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("is not a number"));
  fs::remove_all(dir);
}

TEST(Cli, DemoFlagsTheVanishingTrunkAndPassesTheHealthyModel) {
  const std::string digits = data_dir() + "/digits.csv";
  if (!fs::exists(digits)) {
    // A skipped test is a failed promise in CI: there the data must be present.
    ASSERT_EQ(std::getenv("CI"), nullptr) << digits << " is missing; run scripts/fetch-data.sh";
    GTEST_SKIP() << digits << " missing (run scripts/fetch-data.sh)";
  }
  const fs::path out = temp_dir("demo");
  const Result r = run("demo --steps 150 --data-dir " + data_dir() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("healthy-mlp"));
  EXPECT_THAT(r.out, HasSubstr("verdict: healthy"));

  const auto healthy = nlohmann::json::parse(slurp(out / "demo-healthy-mlp" / "report.json"));
  EXPECT_EQ(healthy["gradscope_report"]["healthy"], true);
  EXPECT_EQ(healthy["gradscope_report"]["steps"], 150);

  const auto sick = nlohmann::json::parse(slurp(out / "demo-vanishing-sigmoid" / "report.json"));
  const auto& report = sick["gradscope_report"];
  EXPECT_EQ(report["healthy"], false);
  EXPECT_EQ(report["flagged_worst_first"][0], "trunk0.weight");
  for (const auto& node : report["nodes"]) {
    const std::string name = node["node"];
    const auto flags = node["flags"].dump();
    if (name == "trunk0.weight" || name == "trunk1.weight") {
      EXPECT_THAT(flags, HasSubstr("VANISHING")) << name;
      EXPECT_LT(node["param_grad_l2"].get<double>(), 1e-7) << name;
    }
    if (name.rfind("out.", 0) == 0) EXPECT_EQ(flags, "[\"HEALTHY\"]") << name;
  }
  EXPECT_TRUE(fs::exists(out / "demo-vanishing-sigmoid" / "report.csv"));
  fs::remove_all(out);
}

}  // namespace
