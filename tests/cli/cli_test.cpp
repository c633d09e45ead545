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
#include <optional>
#include <regex>
#include <sstream>

#include "../common/require_data.h"
#include "cli_process.h"
#include "embedding_fixture.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/version.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

using gradscope::test::Result;
using gradscope::test::slurp;

fs::path temp_dir(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("gradscope-cli-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Runs a shell command line, capturing its exit code, stdout and stderr.
Result run_shell(const std::string& command_line) {
  const fs::path dir = temp_dir("run");
  const std::string cmd = command_line + " >" + (dir / "out").string() + " 2>" + (dir / "err").string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
  fs::remove_all(dir);
  return r;
}

Result run(const std::string& args) { return run_shell(std::string(GRADSCOPE_CLI) + " " + args); }

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

// The demo's MF run: embedding.json with the user and item tables, and the run's steps.
void expect_mf_run(const fs::path& dir, const Result& r) {
  const std::string name = dir.filename().string().substr(std::string("demo-").size());
  EXPECT_THAT(r.out, HasSubstr("== " + name + ": BPR matrix factorisation"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("HR@10 [01]\\.[0-9]{3}, NDCG@10 [01]\\.[0-9]{3} on the held-out items"));
  for (const char* file : {"run.db", "report.txt", "report.json", "report.csv", "embedding_report.json"})
    EXPECT_TRUE(fs::exists(dir / file)) << dir / file;
  const std::string page = slurp(dir / "report.html");
  EXPECT_THAT(page, HasSubstr("data-chart=\"embedding-1-lorenz\""));  // both tables drawn
  EXPECT_THAT(page, HasSubstr("data-chart=\"gradient-flow\""));       // and their gradients
  const std::optional<gradscope::EmbeddingRunSummary> summary = gradscope::load_embedding_summary(dir.string());
  ASSERT_TRUE(summary.has_value()) << dir;
  ASSERT_EQ(summary->tables.size(), 2u);
  const auto report = nlohmann::json::parse(slurp(dir / "report.json"))["gradscope_report"];
  const int64_t steps = report["steps"].get<int64_t>();
  EXPECT_GT(steps, 0);
  const char* layers[] = {"user", "item"};
  for (int t = 0; t < 2; ++t) {
    const gradscope::EmbeddingTableSummary& table = summary->tables[t];
    EXPECT_EQ(table.report.layer, layers[t]);
    EXPECT_EQ(table.profile.layer, layers[t]);
    EXPECT_EQ(table.report.stats.tracked_steps, steps);  // the run store holds every tracked step
    EXPECT_GT(table.profile.exposed_rows, 0);
    EXPECT_EQ(table.profile.exposed_rows, table.report.stats.exposed_rows);
    EXPECT_EQ(table.profile.lorenz.back(), std::make_pair(1.0, 1.0));
    EXPECT_EQ(table.profile.oscillation.counts.size(), 20u);
    // The summary line names the table when it has findings.
    if (!table.report.diagnostics.empty()) {
      EXPECT_THAT(r.out, HasSubstr(std::string(layers[t]) + " [" + table.report.diagnostics[0].type));
    }
  }
  ASSERT_EQ(summary->correlations.size(), 1u);
  // The run carries its tables' rows (the rows.json document in run.db), so a table recipe can
  // be made from it: a budget of a quarter of the item table's FP32 bytes gives a recipe of
  // every row within it.
  EXPECT_EQ(gradscope::stored_run_documents(dir.string()), (std::vector<std::string>{"embedding.json", "rows.json"}));
  const int64_t items = summary->tables[1].profile.num_embeddings;
  const int64_t quarter = items * 64 * 4 / 4;  // dim 64 (matrix_factorization.h), FP32
  const Result c = run("compress " + dir.string() + " --table item=" + std::to_string(quarter));
  EXPECT_EQ(c.code, 0) << c.err;
  const auto tables = nlohmann::json::parse(c.out)["gradscope_row_recipes"]["tables"];
  ASSERT_EQ(tables.size(), 1u);
  EXPECT_EQ(tables[0]["table"], "item");
  EXPECT_EQ(tables[0]["rows"], items);
  EXPECT_EQ(tables[0]["fp32_bytes"], items * 64 * 4);
  EXPECT_EQ(static_cast<int64_t>(tables[0]["level"].size()), items);
  EXPECT_LE(tables[0]["bytes"].get<int64_t>(), quarter);
  EXPECT_EQ(summary->correlations[0].steps, steps);
  const auto nodes = report["nodes"];
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0]["node"], "user");
  EXPECT_EQ(nodes[1]["node"], "item");
  // `gradscope report` reads the saved run (exit 0 healthy, 1 unhealthy; never 3).
  const Result rep = run("report " + dir.string());
  EXPECT_NE(rep.code, 3) << rep.err;
  EXPECT_THAT(rep.out, HasSubstr("item"));
}

TEST(Cli, QuickDemoFlagsEachSickModelWherePlantedAndRecordsTheMfRun) {
  GRADSCOPE_REQUIRE_DATA(data_dir() + "/digits.csv");
  const fs::path out = temp_dir("demo");
  const Result r = run("demo --quick --data-dir " + data_dir() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, StartsWith("gradscope demo --quick: "));
  EXPECT_THAT(r.out, HasSubstr("healthy-mlp"));
  EXPECT_THAT(r.out, HasSubstr("verdict: healthy"));

  const auto healthy = nlohmann::json::parse(slurp(out / "demo-healthy-mlp" / "report.json"));
  EXPECT_EQ(healthy["gradscope_report"]["healthy"], true);
  EXPECT_EQ(healthy["gradscope_report"]["steps"], 60);  // --quick's steps

  // Each sick model: the worst node is the planted one, with the planted flag.
  const std::vector<std::array<std::string, 3>> sick = {{"vanishing-trunk", "trunk0", "VANISHING"},
                                                        {"dying-relu", "fc2", "DEAD"},
                                                        {"nan-later", "logfeat", "NAN"}};
  for (const auto& [run_name, node_name, flag] : sick) {
    const auto doc = nlohmann::json::parse(slurp(out / ("demo-" + run_name) / "report.json"));
    const auto& report = doc["gradscope_report"];
    EXPECT_EQ(report["healthy"], false) << run_name;
    EXPECT_EQ(report["flagged_worst_first"][0], node_name) << run_name;
    bool found = false;
    for (const auto& node : report["nodes"])
      if (node["node"] == node_name) {
        found = true;
        EXPECT_THAT(node["flags"].dump(), HasSubstr(flag)) << run_name;
      }
    EXPECT_TRUE(found) << run_name << " has no node " << node_name;
    EXPECT_TRUE(fs::exists(out / ("demo-" + run_name) / "report.csv"));
    EXPECT_THAT(r.out, ::testing::ContainsRegex(run_name + " +accuracy [0-9.]+  verdict: unhealthy: .*worst " +
                                                node_name + " \\["));
  }
  // Every run has its HTML report, listed at the end of the output.
  for (const char* run_name : {"healthy-mlp", "vanishing-trunk", "dying-relu", "nan-later"}) {
    const fs::path page = out / (std::string("demo-") + run_name) / "report.html";
    EXPECT_THAT(slurp(page), HasSubstr("data-chart=\"gradient-flow\"")) << page;
    EXPECT_THAT(r.out, HasSubstr("  " + page.string() + "\n"));
  }
  // The boosted-tree runs, recorded live: the control is healthy; the overfit fault is flagged
  // from round 6, where XGBoost's own validation curve turns on these settings
  // (TreeFaults.DeepUnregularisedTreesOnASmallSplitOverfitWhereValidationLossTurned).
  // (breast_cancer.csv comes with the digits; DemoWithoutMovieLens... runs the demo without it.)
  GRADSCOPE_REQUIRE_DATA(data_dir() + "/breast_cancer.csv");
  EXPECT_THAT(r.out, ::testing::ContainsRegex(
                         "trees-healthy +valid logloss [0-9.]+  verdict: healthy: no tree finding"));
  EXPECT_THAT(r.out, ::testing::ContainsRegex("trees-overfit +valid logloss [0-9.]+  verdict: "
                                              "unhealthy: trees: .*OVERFITTING from round 6"));
  const auto healthy_trees =
      nlohmann::json::parse(slurp(out / "demo-trees-healthy" / "report.json"));
  EXPECT_TRUE(healthy_trees["trees"]["findings"].empty());
  EXPECT_EQ(healthy_trees["gradscope_report"]["healthy"], true);
  const auto overfit = nlohmann::json::parse(slurp(out / "demo-trees-overfit" / "report.json"));
  EXPECT_EQ(overfit["gradscope_report"]["healthy"], false);
  bool overfitting = false;
  for (const auto& f : overfit["trees"]["findings"])
    if (f["flag"] == "OVERFITTING") {
      overfitting = true;
      EXPECT_EQ(f["first_round"], 6);
    }
  EXPECT_TRUE(overfitting);
  for (const char* run_name : {"trees-healthy", "trees-overfit"}) {
    const fs::path page = out / (std::string("demo-") + run_name) / "report.html";
    EXPECT_THAT(slurp(page), HasSubstr("data-chart=\"tree-loss\"")) << page;
    EXPECT_THAT(r.out, HasSubstr("  " + page.string() + "\n"));
    EXPECT_TRUE(fs::exists(out / (std::string("demo-") + run_name) / "model.json"));
  }
  const auto nan = nlohmann::json::parse(slurp(out / "demo-nan-later" / "report.json"));
  EXPECT_EQ(nan["gradscope_report"]["nonfinite_origin"]["node"], "logfeat");
  EXPECT_EQ(nan["gradscope_report"]["nonfinite_origin"]["step"], 20);

  // Every demo run is run.db alone: copied without anything beside it, `report --json` says
  // the same (and exits the same); every run has report.txt and report.json, and they are what
  // `gradscope report RUN` and `gradscope report RUN --json` print for it (report.csv too, where
  // the run has one: every run but a tree run).
  int saved_runs = 0;
  for (const auto& entry : fs::directory_iterator(out)) {
    if (!fs::exists(entry.path() / "run.db")) continue;
    ++saved_runs;
    const std::string name = entry.path().filename().string();
    EXPECT_TRUE(fs::exists(entry.path() / "report.txt")) << name;
    EXPECT_TRUE(fs::exists(entry.path() / "report.json")) << name;
    for (const char* side : {"embedding.json", "trees.json", "units.json", "rows.json", "compression.json"})
      EXPECT_FALSE(fs::exists(entry.path() / side)) << name << " has " << side << " beside run.db";
    const fs::path alone = out / "alone" / name;
    fs::create_directories(alone);
    fs::copy_file(entry.path() / "run.db", alone / "run.db");
    const Result whole = run("report --json " + entry.path().string()), copy = run("report --json " + alone.string());
    EXPECT_NE(whole.code, 3) << name << ": " << whole.err;
    EXPECT_EQ(copy.code, whole.code) << name;
    EXPECT_EQ(copy.out, whole.out) << name;
    EXPECT_EQ(slurp(entry.path() / "report.json"), whole.out) << name;
    const Result text = run("report " + entry.path().string());
    EXPECT_EQ(text.code, whole.code) << name;
    EXPECT_EQ(slurp(entry.path() / "report.txt"), text.out) << name;
    const bool tree_run = name.rfind("demo-trees-", 0) == 0;
    EXPECT_EQ(fs::exists(entry.path() / "report.csv"), !tree_run) << name;
    if (!tree_run) {
      EXPECT_EQ(slurp(entry.path() / "report.csv"), run("report --csv " + entry.path().string()).out) << name;
    }
  }
  EXPECT_GE(saved_runs, 9);  // 4 digits models, 2 tree runs, 2 MF runs, the compression run
  fs::remove_all(out / "alone");

  // The MF run: MovieLens when fetched, otherwise the digits fallback, said so.
  const bool movielens = fs::exists(data_dir() + "/movielens.csv");
  if (movielens) {
    EXPECT_EQ(r.out.find("MovieLens not found"), std::string::npos);
  } else {
    EXPECT_THAT(r.out, HasSubstr("MovieLens not found (run scripts/fetch-data.sh movielens); using"));
  }
  const fs::path mf = out / (movielens ? "demo-mf-movielens" : "demo-mf-digits-pixels");
  expect_mf_run(mf, r);
  EXPECT_THAT(r.out, HasSubstr("5 epochs"));  // --quick's epochs
  // The planted MF run: every 4th item row decayed past its minimum each step flips sign update
  // after update; the tuned Adam run has no zombies.
  const fs::path planted = mf.string() + "-oscillation";
  expect_mf_run(planted, r);
  EXPECT_THAT(r.out, HasSubstr("planted: every 4th item row decayed past its minimum each step"));
  auto has_zombies = [](const fs::path& run_dir, int table) {
    const auto summary = gradscope::load_embedding_summary(run_dir.string());  // kept alive for the loop
    if (!summary) return false;
    for (const auto& d : summary->tables.at(table).report.diagnostics)
      if (d.type == "ZOMBIE_ROWS") return true;
    return false;
  };
  EXPECT_FALSE(has_zombies(mf, 0));
  EXPECT_FALSE(has_zombies(mf, 1));
  EXPECT_FALSE(has_zombies(planted, 0));
  if (movielens) {  // measured on MovieLens (seed 7, 5 epochs): 1,543 item rows truly oscillate
    EXPECT_TRUE(has_zombies(planted, 1));
    EXPECT_THAT(r.out, HasSubstr("mf-movielens-oscillation HR@10 "));
    EXPECT_THAT(r.out, HasSubstr("embedding: item [ZOMBIE_ROWS]"));
    // The evidence the demo prints: the flagged rows' whole-run mean cosine between consecutive
    // updates, measured by the demo's own code from the weights, is clearly negative for every
    // flagged row, every flagged row is one the demo's code finds oscillating, and the
    // tracker's own mean_cosine of those rows agrees.
    std::smatch m;
    const std::regex evidence(
        "evidence, item: ZOMBIE_ROWS: ([0-9]+) rows flagged, ([0-9]+) of them among the rows "
        "measured below as oscillating; their whole-run mean cosine between consecutive updates, "
        "from the weights before and after each step: mean (-?[0-9.]+) "
        "\\((-?[0-9.]+)\\.\\.(-?[0-9.]+)\\); the tracker's mean_cosine: mean (-?[0-9.]+) "
        "\\((-?[0-9.]+\\.\\.-?[0-9.]+)\\)");
    ASSERT_TRUE(std::regex_search(r.out, m, evidence)) << r.out;
    // 250 steps at --quick: 662 of the 1,543 oscillating rows have the 33 updates the rule needs.
    EXPECT_GT(std::stoi(m[1]), 500);
    EXPECT_EQ(m[2], m[1]);
    EXPECT_LT(std::stod(m[3]), -0.5);
    EXPECT_LT(std::stod(m[5]), -0.3);  // the largest of them
    EXPECT_NEAR(std::stod(m[6]), std::stod(m[3]), 0.01);
    EXPECT_THAT(r.out, HasSubstr("mean_cosine: mean " + m[6].str() + " (" + m[7].str() + ")\n"
                                 "   evidence, item: measured by the run's own code: 1543 rows"));
    // The advice is a sentence; the action code stays in the JSON for programs.
    EXPECT_THAT(r.out, HasSubstr("      what to do: Lower this table's learning rate"));
    EXPECT_EQ(r.out.find("LOWER_EMBEDDING_LR_OR_ENABLE_AUTO_FIX"), std::string::npos);
    EXPECT_EQ(slurp(planted / "report.txt").find("LOWER_EMBEDDING_LR"), std::string::npos);
  }
  // One verdict per MF run, its last line, after the findings (and on screen the evidence): on
  // screen (the run's block) and in report.txt, which is `gradscope report RUN` and so has no
  // evidence lines. No "verdict: healthy" from the node table above findings.
  const std::string runs[] = {mf.filename().string(), planted.filename().string()};
  for (const std::string& run_name : runs) {
    const std::size_t begin = r.out.find("\n== " + run_name.substr(5) + ":");
    ASSERT_NE(begin, std::string::npos) << run_name;
    // To the next run's "\n== " or the summary, each after an empty line.
    const std::size_t end =
        std::min(r.out.find("\n== ", begin + 1), r.out.find("\nsummary\n", begin));
    ASSERT_NE(end, std::string::npos) << run_name;
    const std::string block = r.out.substr(begin, end - begin);
    const std::string report_txt = slurp(fs::path(out) / run_name / "report.txt");
    for (const std::string& text : {block, report_txt}) {
      const std::size_t verdict = text.find("\nverdict: ");
      ASSERT_NE(verdict, std::string::npos) << run_name << "\n" << text;
      EXPECT_EQ(text.find("verdict:", verdict + 2), std::string::npos) << run_name << "\n" << text;
      EXPECT_LT(text.rfind("embedding tables:"), verdict) << run_name;
      // Nothing after the verdict's line.
      EXPECT_EQ(text.find('\n', verdict + 1), text.size() - 1) << run_name << "\n" << text;
    }
    EXPECT_LT(block.rfind("   evidence, item: "), block.find("\nverdict: ")) << run_name;
    EXPECT_EQ(report_txt.find("   evidence, "), std::string::npos) << run_name;
    EXPECT_THAT(report_txt, ::testing::EndsWith(block.substr(block.find("\nverdict: "))));
  }
  if (movielens) {
    EXPECT_THAT(r.out, HasSubstr("\nverdict: unhealthy: embedding: item [ZOMBIE_ROWS]; nodes "
                                 "healthy (2 nodes, 250 steps)\n"));
    EXPECT_THAT(r.out,
                HasSubstr("\nverdict: healthy (2 nodes, 250 steps); embedding: no findings\n"));
    // The healthy run's own check finds no oscillating row.
    EXPECT_THAT(r.out, HasSubstr("evidence, item: measured by the run's own code: 0 rows with a whole-run mean "
                                 "consecutive cosine <= -0.3"));
  }
  fs::remove_all(out);
}

TEST(Cli, DemoWithoutMovieLensSaysSoAndFallsBackToDigitsPixels) {
  GRADSCOPE_REQUIRE_DATA(data_dir() + "/digits.csv");
  const fs::path data = temp_dir("digits-only");
  fs::copy_file(data_dir() + "/digits.csv", data / "digits.csv");
  const fs::path out = temp_dir("demo-fallback");
  const Result r = run("demo --quick --steps 3 --mf-epochs 2 --data-dir " + data.string() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("MovieLens not found (run scripts/fetch-data.sh movielens); using sklearn digits "
                               "as implicit feedback (fallback): images as users, the 64 pixel positions as "
                               "items, a positive where the pixel value >= 8"));
  EXPECT_FALSE(fs::exists(out / "demo-mf-movielens"));
  expect_mf_run(out / "demo-mf-digits-pixels", r);
  EXPECT_THAT(r.out, HasSubstr("breast_cancer.csv not found in " + data.string() +
                               " (run scripts/fetch-data.sh): the boosted-tree runs are skipped"));
  EXPECT_FALSE(fs::exists(out / "demo-trees-healthy"));
  EXPECT_THAT(r.out, HasSubstr("2 epochs"));
  fs::remove_all(out);
  fs::remove_all(data);
}

TEST(Cli, MissingDataFailsTheTestNamingWhatWritesItInCiOrNot) {
  // This test binary, asked to run one data test with the data gone: it fails, never skips.
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string one = " " + self + " --gtest_filter=CliRuns.DemoWritesRunsThatReportReads";
  for (const char* ci : {"env -u CI", "env CI=false", "env CI=true"}) {
    const Result r = run_shell(std::string(ci) + " GRADSCOPE_DATA_DIR=/nonexistent/gradscope-data" + one);
    EXPECT_NE(r.code, 0) << ci << "\n" << r.out;
    EXPECT_THAT(r.out, HasSubstr("/nonexistent/gradscope-data/digits.csv is missing: `make data`"))
        << ci;
    EXPECT_THAT(r.out, HasSubstr("[  FAILED  ]")) << ci;
    EXPECT_THAT(r.out, Not(HasSubstr("[  SKIPPED ]"))) << ci;
  }
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

// A damaged run read with --partial: its JSON says that it was damaged, which part and what of
// it was left out; once its attention table was lost, the attention findings vanished from the
// report without a word.
TEST(CliRuns, PartialJsonSaysWhichTablesWereDamagedAndWhatWasLeftOut) {
  const fs::path dir = temp_dir("damaged-json");
  const fs::path run_dir = dir / "r";
  {
    gradscope::RunWriter w(run_dir.string());
    for (int step = 0; step < 12; ++step) {
      w.add(Record{step, "body", Site::kParamGrad, grad(1.0)});
      gradscope::HeadStats h;  // the largest logit grows from step 4
      h.queries = h.fraction_queries = 16;
      h.max_logit = step < 4 ? 3.0 : 300.0 * step;
      h.entropy_fraction_sum = 16 * 0.8;
      w.add(gradscope::AttentionRecord{step, "body", {h}});
    }
    w.close();
  }
  const auto attention_findings = [](const nlohmann::json& doc) {
    int n = 0;
    for (const nlohmann::json& f : doc.at("findings")) n += f.at("type") == "ATTENTION_LOGIT_GROWTH";
    return n;
  };
  Result r = run("report --json " + run_dir.string());
  ASSERT_EQ(r.code, 1) << r.err;
  nlohmann::json doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("damaged"), false);
  EXPECT_EQ(doc.at("damage"), nlohmann::json::array());
  EXPECT_EQ(attention_findings(doc), 1);

  sql(run_dir / "run.db", "DROP TABLE attention");
  EXPECT_EQ(run("report --json " + run_dir.string()).code, 3);
  r = run("report --partial --json " + run_dir.string());
  ASSERT_EQ(r.code, 0) << r.err;
  doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("damaged"), true);
  ASSERT_GE(doc.at("damage").size(), 1u) << doc.at("damage").dump();
  EXPECT_EQ(doc.at("damage")[0].at("part"), "attention");
  EXPECT_THAT(doc.at("damage")[0].at("what").get<std::string>(), HasSubstr("its records are not read"));
  EXPECT_EQ(attention_findings(doc), 0);

  // A damaged step: the part is the steps table, and the step is named.
  const fs::path other = make_run(dir / "s", 10, false);
  sql(other / "run.db", "UPDATE steps SET records = zeroblob(length(records)) WHERE step = 4");
  r = run("report --partial --json " + other.string());
  ASSERT_EQ(r.code, 0) << r.err;
  doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc.at("damaged"), true);
  ASSERT_EQ(doc.at("damage").size(), 1u) << doc.at("damage").dump();
  EXPECT_EQ(doc.at("damage")[0].at("part"), "steps");
  EXPECT_THAT(doc.at("damage")[0].at("what").get<std::string>(), HasSubstr("step 4 is damaged (checksum mismatch); skipped"));
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
  // --json: the frames it draws, as numbers: the whole run's are export's; a range is a part.
  r = run("animate --json " + r_dir);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, run("export --format json " + r_dir).out);
  r = run("animate --json --from 2 --to 5 " + r_dir);
  const auto frames = nlohmann::json::parse(r.out);
  ASSERT_EQ(frames.size(), 4u);
  EXPECT_EQ(frames.front()["step"], 2);
  EXPECT_EQ(frames.back()["step"], 5);
  EXPECT_EQ(run("animate --json --follow " + r_dir).code, 2);
  fs::remove_all(dir);
}

TEST(CliRuns, ReportShowsSavedEmbeddingFindingsAndFailsOnThem) {
  const fs::path dir = temp_dir("report-emb");
  const std::string r_dir = make_run(dir / "r", 3, false).string();
  ASSERT_EQ(run("report " + r_dir).code, 0);  // healthy before the tables are saved
  gradscope::EmbeddingRunSummary summary = gradscope::test::zombie_table_summary(0.75);
  summary.tables[0].report.stats.active_coverage_pct = 75;
  summary.tables[0].report.stats.popularity_gini = 0.288;
  gradscope::save_embedding_summary(r_dir, summary);
  Result r = run("report " + r_dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("embedding tables:\n  item (40 rows, 75.0% exposed, popularity Gini 0.288): 1 finding\n"
                               "    ZOMBIE_ROWS (confidence 0.75): 8 of 30 exposed rows oscillate\n"
                               "      what to do: Lower this table's learning rate.\n"));
  // One verdict for the run, last: the nodes are healthy, the item table is not.
  EXPECT_THAT(r.out, HasSubstr("\nverdict: unhealthy: embedding: item [ZOMBIE_ROWS]; nodes healthy (3 nodes, 3 steps)\n"));
  r = run("report " + r_dir + " --json");
  EXPECT_EQ(r.code, 1);
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_EQ(doc["run"]["unhealthy"], true);
  EXPECT_EQ(doc["embedding"]["tables"][0]["layer"], "item");
  EXPECT_EQ(doc["embedding"]["tables"][0]["diagnostics"][0]["type"], "ZOMBIE_ROWS");
  fs::remove_all(dir);
}

// The auto-fix log saved in the run: report summarises it per table and act type.
TEST(CliRuns, ReportSummarisesTheAutoFixLog) {
  const fs::path dir = temp_dir("report-autofix");
  const std::string r_dir = make_run(dir / "r", 3, false).string();
  const auto act = [](int step, const char* layer, const char* type, int rows) {
    return "{\"time\": 1, \"step\": " + std::to_string(step) + ", \"layer\": \"" + layer + "\", \"type\": \"" + type +
           "\", \"rows_affected\": " + std::to_string(rows) + "}";
  };
  gradscope::append_run_log(r_dir, {act(5, "item", "ZOMBIE_GRADIENT_SCALE", 2), act(7, "item", "ZOMBIE_GRADIENT_SCALE", 3),
                                    act(6, "user", "UNDERTRAINED_GRADIENT_BOOST", 1), "not json"});
  const Result r = run("report " + r_dir);
  EXPECT_EQ(r.code, 0) << r.err;  // acts taken are not findings
  EXPECT_THAT(r.out, HasSubstr("auto-fix log (4 acts):\n"
                               "  item ZOMBIE_GRADIENT_SCALE: 2 acts at steps 5-7, 5 row gradients scaled\n"
                               "  user UNDERTRAINED_GRADIENT_BOOST: 1 act at steps 6-6, 1 row gradients scaled\n"
                               "  1 lines are not acts gradscope wrote\n"));
  fs::remove_all(dir);
}

TEST(CliRuns, HtmlWritesTheReportAndEachChartsSpec) {
  const fs::path dir = temp_dir("html");
  const std::string r_dir = make_run(dir / "r", 5, true).string();
  Result r = run("html " + r_dir + " -o " + (dir / "out" / "page.html").string() + " --spec " + (dir / "specs").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("wrote " + (dir / "out" / "page.html").string() + " (4 charts) and 4 specs in "));
  const Result j = run("html --json " + r_dir + " -o " + (dir / "out" / "page2.html").string());
  ASSERT_EQ(j.code, 0) << j.err;
  EXPECT_EQ(nlohmann::json::parse(j.out),
            nlohmann::json::parse("{\"gradscope_html\": {\"page\": \"" + (dir / "out" / "page2.html").string() +
                                  "\", \"charts\": 4, \"spec_dir\": null}}"));
  EXPECT_EQ(slurp(dir / "out" / "page2.html").size(), slurp(dir / "out" / "page.html").size());  // the same page (its script nonce differs)
  const std::string page = slurp(dir / "out" / "page.html");
  EXPECT_THAT(page, HasSubstr("<p class=\"verdict bad\">verdict: unhealthy"));
  EXPECT_THAT(page, HasSubstr("a,b &quot;q&quot;\nx"));  // the node name, escaped
  EXPECT_THAT(page, HasSubstr("vega-embed"));         // the built-in libraries are inlined
  EXPECT_THAT(page, Not(HasSubstr("<script src")));
  // Gradients only: the activation and update charts are replaced by a line saying why.
  EXPECT_THAT(page, HasSubstr("No activations recorded."));
  EXPECT_THAT(page, HasSubstr("No parameter updates recorded."));
  int specs = 0;
  for (const auto& entry : fs::directory_iterator(dir / "specs")) {
    const auto spec = nlohmann::json::parse(slurp(entry.path()));
    EXPECT_THAT(spec["$schema"].get<std::string>(), HasSubstr("vega-lite")) << entry.path();
    EXPECT_THAT(page, HasSubstr("data-chart=\"" + entry.path().stem().string() + "\""));
    ++specs;
  }
  EXPECT_EQ(specs, 4);
  // Without -o the page goes beside run.db, whether the run or its run.db was named.
  r = run("html " + (dir / "r" / "run.db").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir / "r" / "report.html"));
  fs::remove_all(dir);
}

// A run of `steps` steps whose loss is `loss(step)`, as audit.step(opt, loss=...) saves it.
fs::path make_loss_run(const fs::path& dir, const std::string& name, int steps, double (*loss)(int)) {
  gradscope::RunWriterOptions opt;
  opt.name = name;
  gradscope::RunWriter w(dir.string(), opt);
  for (int step = 0; step < steps; ++step) {
    w.add(Record{step, "rnn", Site::kParamGrad, grad(0.5)});
    w.add(gradscope::StepScalar{step, gradscope::kLossSeries, loss(step)});
  }
  w.close();
  return dir;
}

TEST(CliRuns, HtmlDrawsAnotherRunsLossBesideThisOnesWithItsVerdict) {
  const fs::path dir = temp_dir("html-beside");
  const std::string blowup =
      make_loss_run(dir / "b", "lstm-blowup", 40, [](int s) { return s < 20 ? 4.0 : 90.0; }).string();
  const std::string clipped = make_loss_run(dir / "c", "lstm-clipped", 40, [](int s) { return 4.0 - 0.01 * s; }).string();
  const Result r = run("html " + blowup + " --beside " + clipped + " -o " + (dir / "page.html").string());
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string page = slurp(dir / "page.html");
  EXPECT_THAT(page, HasSubstr("verdict: unhealthy: DIVERGENCE at step 20"));
  EXPECT_THAT(page, HasSubstr("Drawn beside it: <b class=\"mono\">lstm-clipped</b>, healthy"));
  // The chart holds both losses, each under its run's name (JSON escaped for the page).
  EXPECT_THAT(page, HasSubstr("\"series\":\"lstm-blowup\""));
  EXPECT_THAT(page, HasSubstr("\"series\":\"lstm-clipped\""));
  // The one beside must be a run: named, it is read like the run itself.
  const Result missing = run("html " + blowup + " --beside " + (dir / "missing").string());
  EXPECT_EQ(missing.code, 3);
  EXPECT_THAT(missing.err, HasSubstr((dir / "missing").string()));
  fs::remove_all(dir);
}

TEST(CliRuns, HtmlShowsSavedEmbeddingTables) {
  const fs::path dir = temp_dir("html-emb");
  const std::string r_dir = make_run(dir / "r", 3, false).string();
  gradscope::EmbeddingRunSummary summary;
  gradscope::EmbeddingTableSummary table;
  table.report.layer = table.profile.layer = "item";
  table.profile.lorenz = {{0, 0}, {1, 1}};
  table.profile.exposure = {{1, 10}, {4}, 0, 0};
  table.profile.velocity = {{0.1, 1}, {4}, 0, 0};
  table.profile.oscillation = {{-1, 1}, {4}, 0, 0};
  summary.tables = {table};
  gradscope::save_embedding_summary(r_dir, summary);
  const Result r = run("html " + r_dir + " -o " + (dir / "page.html").string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("(8 charts)"));  // 4 of the run's gradients, 4 of the table
  const std::string page = slurp(dir / "page.html");
  EXPECT_THAT(page, HasSubstr("<section id=\"embedding\">"));
  EXPECT_THAT(page, HasSubstr("data-chart=\"embedding-0-lorenz\""));
  fs::remove_all(dir);
}

TEST(CliRuns, HtmlBadInputExitsWithTheRightCode) {
  const fs::path dir = temp_dir("html-bad");
  EXPECT_EQ(run("html " + (dir / "missing").string()).code, 3);
  EXPECT_EQ(run("html").code, 2);
  const std::string r_dir = make_run(dir / "r", 2, false).string();
  fs::create_directories(dir / "taken.html");  // a folder where the page should go
  const Result r = run("html " + r_dir + " -o " + (dir / "taken.html").string());
  EXPECT_EQ(r.code, 3);
  EXPECT_THAT(r.err, HasSubstr("cannot write '" + (dir / "taken.html").string() + "'"));
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
  GRADSCOPE_REQUIRE_DATA(data_dir() + "/digits.csv");
  const fs::path out = temp_dir("demo-runs");
  Result r = run("demo --quick --steps 40 --data-dir " + data_dir() + " --out " + out.string());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("gradscope report " + (out / "demo-vanishing-trunk").string()));
  r = run("report " + (out / "demo-vanishing-trunk").string());
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("trunk0: gradient L2 < 1e-07 in 40 of 40 frames"));
  EXPECT_THAT(r.out, HasSubstr("command: " GRADSCOPE_CLI " demo --quick --steps 40"));
  r = run("report " + (out / "demo-healthy-mlp").string());
  EXPECT_EQ(r.code, 0) << r.out;
  // report.json, report.html and `gradscope report` all come from the saved run, which holds
  // the whole report (channel findings, node order, NaN origin): they say the same.
  for (const char* name : {"healthy-mlp", "vanishing-trunk", "dying-relu", "nan-later", "compress-mlp"}) {
    const fs::path dir = out / (std::string("demo-") + name);
    r = run("report --json " + dir.string());
    ASSERT_LE(r.code, 1) << r.err;
    const auto saved = nlohmann::json::parse(r.out).at("gradscope_report");
    EXPECT_EQ(nlohmann::json::parse(slurp(dir / "report.json")).at("gradscope_report"), saved) << name;
    int64_t channels = 0;
    for (const auto& node : saved.at("nodes")) channels += node.at("channels").get<int64_t>();
    EXPECT_GT(channels, 0) << name << ": the demo's channel views are in its saved run";
  }
  // The agent schema on the real runs (docs/agent-json.md): each planted pathology is a finding
  // on the node and from the step where it was planted, holding the report's measured value.
  EXPECT_EQ(nlohmann::json::parse(run("report --json " + (out / "demo-healthy-mlp").string()).out).at("findings"),
            nlohmann::json::array());
  const std::array<std::array<const char*, 3>, 3> planted = {
      {{"vanishing-trunk", "VANISHING", "trunk0"}, {"dying-relu", "DEAD", "fc2"}, {"nan-later", "NAN", "logfeat"}}};
  for (const auto& [name, type, node] : planted) {
    const auto doc = nlohmann::json::parse(run("report --json " + (out / (std::string("demo-") + name)).string()).out);
    const nlohmann::json* finding = nullptr;
    for (const auto& f : doc.at("findings"))
      if (f.at("type") == type && f.at("node") == node) finding = &f;
    ASSERT_NE(finding, nullptr) << name << ": " << doc.at("findings").dump(1);
    for (const auto& n : doc.at("gradscope_report").at("nodes"))
      for (const auto& e : n.at("evidence"))
        if (n.at("node") == node && e.at("flag") == type) {
          EXPECT_EQ(finding->at("since_step"), e.at("first_step")) << name;
          EXPECT_EQ(finding->at("evidence")[0].at("value"), e.at("value")) << name;
        }
    EXPECT_EQ(finding->at("since_step"), std::string(name) == "nan-later" ? 20 : 0) << name;
    EXPECT_EQ(finding->at("confidence"), "high") << name;
  }
  fs::remove_all(out);
}

}  // namespace gradscope_runs
