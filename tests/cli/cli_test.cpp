// The gradscope command as a user runs it: exit codes, stderr text, the demo's verdicts, and
// the subcommands over saved runs.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gradscope/io/run_writer.h"
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

  // Each sick model: the worst node is the planted one, with the planted flag.
  const std::vector<std::array<std::string, 3>> sick = {{"vanishing-trunk", "trunk0", "VANISHING"},
                                                        {"dying-relu", "fc2", "DEAD"},
                                                        {"nan-later", "logfeat", "NAN"}};
  for (const auto& [run_name, node_name, flag] : sick) {
    const auto doc = nlohmann::json::parse(slurp(out / ("demo-" + run_name) / "report.json"));
    const auto& report = doc["gradscope_report"];
    EXPECT_EQ(report["healthy"], false) << run_name;
    EXPECT_EQ(report["flagged_worst_first"][0], node_name) << run_name;
    for (const auto& node : report["nodes"])
      if (node["node"] == node_name) EXPECT_THAT(node["flags"].dump(), HasSubstr(flag)) << run_name;
    EXPECT_TRUE(fs::exists(out / ("demo-" + run_name) / "report.csv"));
  }
  const auto nan = nlohmann::json::parse(slurp(out / "demo-nan-later" / "report.json"));
  EXPECT_EQ(nan["gradscope_report"]["nonfinite_origin"]["node"], "logfeat");
  EXPECT_EQ(nan["gradscope_report"]["nonfinite_origin"]["step"], 20);
  fs::remove_all(out);
}

}  // namespace

// ---- Subcommands over saved runs (report, animate, export, diff, ls) ----

namespace gradscope_runs {

using gradscope::Record;
using gradscope::Site;
using gradscope::Stats;

Stats grad(double l2) {
  Stats s;
  s.count = s.finite = 10;
  s.sum_sq = l2 * l2;
  s.sum = s.sum_abs = l2;
  s.min = -l2;
  s.max = s.max_abs = l2;
  return s;
}

// A run of `steps` steps over nodes "embed", "a,b \"q\"\nx" (hostile) and "head"; with `sick`
// the embed gradient vanishes.
fs::path make_run(const fs::path& dir, int steps, bool sick) {
  gradscope::RunWriterOptions opt;
  opt.command_line = "cli_test";
  gradscope::RunWriter w(dir.string(), opt);
  for (int step = 0; step < steps; ++step) {
    w.add(Record{step, "embed", Site::kParamGrad, grad(sick ? 1e-9 : 0.5)});
    w.add(Record{step, "a,b \"q\"\nx", Site::kParamGrad, grad(0.25 + step)});
    w.add(Record{step, "head", Site::kParamGrad, grad(1.0)});
  }
  w.close();
  return dir;
}

void sql(const fs::path& db, const std::string& statement) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, statement.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  sqlite3_close(h);
}

TEST(CliRuns, ReportExitsZeroWhenHealthyAndOneWhenNot) {
  const fs::path dir = temp_dir("report");
  const std::string good = make_run(dir / "good", 20, false).string();
  const std::string bad = make_run(dir / "bad", 20, true).string();
  Result r = run("report " + good);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("command: cli_test"));
  EXPECT_THAT(r.out, HasSubstr("verdict: healthy (3 nodes, 20 steps)"));
  EXPECT_THAT(r.out, HasSubstr("gradient flow: healthy (0 of 20 frames with issues"));
  r = run("report " + bad);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, ::testing::ContainsRegex("embed +20 .* VANISHING"));
  EXPECT_THAT(r.out, HasSubstr("a,b \"q\"\\nx"));  // the newline in the name is shown escaped
  EXPECT_THAT(r.out, HasSubstr("embed: gradient L2 < 1e-07 in 20 of 20 frames since step 0 (median 1e-09"));
  EXPECT_THAT(r.out, HasSubstr("gradient flow: problems detected (20 of 20 frames"));

  r = run("report --json " + bad);
  EXPECT_EQ(r.code, 1);
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["run"]["unhealthy"], true);
  EXPECT_EQ(doc["run"]["command_line"], "cli_test");
  EXPECT_EQ(doc["gradscope_report"]["flagged_worst_first"][0], "embed");
  EXPECT_EQ(doc["gradient_flow"]["health"], "problems detected");
  EXPECT_EQ(doc["gradient_flow"]["nodes"][1]["node"], "a,b \"q\"\nx");

  r = run("report --csv " + good);
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, StartsWith("node,steps,"));
  EXPECT_THAT(r.out, HasSubstr("\"a,b \"\"q\"\"\nx\",20,"));
  EXPECT_EQ(run("report --csv --json " + good).code, 2);
  fs::remove_all(dir);
}

TEST(CliRuns, MissingCorruptAndNewerRunsExitThreeNamingTheFile) {
  const fs::path dir = temp_dir("badruns");
  Result r = run("report " + (dir / "nope").string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, StartsWith("gradscope: error: run database '" + (dir / "nope" / "run.db").string() + "': no such file"));

  fs::create_directories(dir / "garbage");
  std::ofstream(dir / "garbage" / "run.db") << std::string(3000, 'z');
  r = run("report " + (dir / "garbage").string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("'" + (dir / "garbage" / "run.db").string() + "': corrupt or not a gradscope run"));

  make_run(dir / "newer", 3, false);
  sql(dir / "newer" / "run.db", "PRAGMA user_version = 9");
  r = run("report " + (dir / "newer").string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("schema version 9 is newer than this gradscope reads"));
  fs::remove_all(dir);
}

TEST(CliRuns, DamagedRunExitsThreeAndPartialReadsTheCompleteSteps) {
  const fs::path dir = temp_dir("damaged");
  const fs::path run_dir = make_run(dir / "r", 10, false);
  sql(run_dir / "run.db", "UPDATE steps SET records = zeroblob(length(records)) WHERE step = 4");
  Result r = run("report " + run_dir.string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("step 4 is damaged (checksum mismatch)"));
  EXPECT_THAT(r.err, HasSubstr("--partial"));
  r = run("report --partial " + run_dir.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("gradscope: warning: "));
  EXPECT_THAT(r.out, HasSubstr("verdict: healthy (3 nodes, 9 steps)"));
  r = run("export --partial --format csv " + run_dir.string());
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1 + 9 * 3 + 9);  // + the name's newline
  fs::remove_all(dir);
}

TEST(CliRuns, EmptyRunSaysNoStepsRecorded) {
  const fs::path dir = temp_dir("emptyrun");
  gradscope::RunWriter((dir / "e").string()).close();
  for (const char* cmd : {"report ", "animate ", "export --format json "}) {
    const Result r = run(cmd + (dir / "e").string());
    EXPECT_EQ(r.code, 3) << cmd;
    EXPECT_THAT(r.err, HasSubstr("no steps recorded")) << cmd;
  }
  fs::remove_all(dir);
}

TEST(CliRuns, AnimateDrawsTheSelectedStepsWithoutColourWhenPiped) {
  const fs::path dir = temp_dir("animate");
  const std::string r_dir = make_run(dir / "r", 40, true).string();
  Result r = run("animate " + r_dir + " --metric norm --log --from 2 --to 5 --width 60");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("gradient flow: grad_norm, log scale, steps 2..5 (4 frames)\n"));
  EXPECT_THAT(r.out, HasSubstr("embed "));
  EXPECT_THAT(r.out, HasSubstr("a,b \"q\"\\nx"));
  EXPECT_EQ(r.out.find("\x1b["), std::string::npos);
  r = run("animate " + r_dir + " --follow --width 60");  // a closed run: draws once and ends
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("steps 0..39 (40 frames"));
  EXPECT_EQ(run("animate " + r_dir + " --from 5 --to 2").code, 2);
  EXPECT_EQ(run("animate " + r_dir + " --metric loss").code, 2);
  fs::remove_all(dir);
}

TEST(CliRuns, ExportWritesJsonCsvAndJsonlThatParseBack) {
  const fs::path dir = temp_dir("export");
  const std::string r_dir = make_run(dir / "r", 5, false).string();
  Result r = run("export " + r_dir + " --format json");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto frames = nlohmann::json::parse(r.out);
  ASSERT_EQ(frames.size(), 5u);
  EXPECT_EQ(frames[4]["step"], 4);
  EXPECT_EQ(frames[4]["layers"][1]["name"], "a,b \"q\"\nx");
  EXPECT_DOUBLE_EQ(frames[4]["layers"][1]["grad_norm"].get<double>(), 4.25);
  EXPECT_DOUBLE_EQ(frames[4]["layers"][0]["flow_intensity"].get<double>(), 0.5 / 4.25);

  r = run("export " + r_dir + " --format csv");
  EXPECT_THAT(r.out, StartsWith("step,layer,mean_abs_grad,max_abs_grad,grad_norm,is_vanishing,is_exploding\n"));
  EXPECT_THAT(r.out, HasSubstr("4,\"a,b \"\"q\"\"\nx\",0.42499999999999999,4.25,4.25,0,0\n"));

  const fs::path out = dir / "records.jsonl";
  r = run("export " + r_dir + " --format jsonl -o " + out.string());
  EXPECT_EQ(r.code, 0);
  std::ifstream in(out);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    const auto rec = nlohmann::json::parse(line);
    EXPECT_EQ(rec["step"], lines / 3);
    ++lines;
  }
  EXPECT_EQ(lines, 15);
  EXPECT_EQ(run("export " + r_dir).code, 2);  // --format is required
  EXPECT_EQ(run("export " + r_dir + " --format xml").code, 2);
  fs::remove_all(dir);
}

TEST(CliRuns, DiffNamesNodesThatChangedAndExitsOneWhenWorse) {
  const fs::path dir = temp_dir("diff");
  const std::string good = make_run(dir / "good", 10, false).string();
  const std::string bad = make_run(dir / "bad", 10, true).string();
  Result r = run("diff " + good + " " + bad);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("embed"));
  EXPECT_THAT(r.out, HasSubstr("HEALTHY  VANISHING"));
  EXPECT_THAT(r.out, HasSubstr("x2.00e-09  worse"));
  EXPECT_THAT(r.out, HasSubstr("1 node changed health, 1 worse in B"));
  r = run("diff " + bad + " " + good);
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, HasSubstr("better"));
  EXPECT_EQ(run("diff " + good).code, 2);
  fs::remove_all(dir);
}

TEST(CliRuns, LsListsRunsWithHealthAndKeepsGoingPastBadOnes) {
  const fs::path dir = temp_dir("ls");
  make_run(dir / "a-good", 4, false);
  make_run(dir / "b-bad", 4, true);
  fs::create_directories(dir / "c-broken");
  std::ofstream(dir / "c-broken" / "run.db") << "not sqlite";
  fs::create_directories(dir / "not-a-run");
  Result r = run("ls " + dir.string());
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("a-good"));
  EXPECT_THAT(r.out, HasSubstr("healthy; gradient flow healthy"));
  EXPECT_THAT(r.out, HasSubstr("unhealthy: 1 flagged, worst embed [VANISHING]"));
  EXPECT_THAT(r.out, HasSubstr("error: run database"));
  EXPECT_EQ(r.out.find("not-a-run"), std::string::npos);
  r = run("ls " + (dir / "missing").string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("not a directory"));
  fs::remove_all(dir);
}

TEST(CliRuns, DemoWritesRunsThatReportReads) {
  const std::string digits = data_dir() + "/digits.csv";
  if (!fs::exists(digits)) {
    ASSERT_EQ(std::getenv("CI"), nullptr) << digits << " is missing; run scripts/fetch-data.sh";
    GTEST_SKIP() << digits << " missing (run scripts/fetch-data.sh)";
  }
  const fs::path out = temp_dir("demo-runs");
  Result r = run("demo --steps 40 --data-dir " + data_dir() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("gradscope report " + (out / "demo-vanishing-trunk").string()));
  r = run("report " + (out / "demo-vanishing-trunk").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("trunk0: gradient L2 < 1e-07 in 40 of 40 frames"));
  EXPECT_THAT(r.out, HasSubstr("command: " GRADSCOPE_CLI " demo --steps 40"));
  r = run("report " + (out / "demo-healthy-mlp").string());
  EXPECT_EQ(r.code, 0) << r.out;
  fs::remove_all(out);
}

}  // namespace gradscope_runs
