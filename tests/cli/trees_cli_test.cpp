// `gradscope trees` as a user runs it, on models trained once with XGBoost on breast_cancer and
// saved as JSON files: the values it prints are the library's and XGBoost's, its exit codes
// follow the findings, bad input is an error naming the file, and report / ls / html / diff
// work on the runs it writes.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../common/require_data.h"
#include "cli_process.h"
#include "gradscope/core/trees/dynamics.h"
#include "gradscope/core/findings/findings.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/trees/data_files.h"
#include "gradscope/trees/read_model.h"
#include "gradscope/trees/xgboost_api.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using Json = nlohmann::json;

using test::Result;
using test::slurp;

const fs::path& work() {
  static const fs::path dir = [] {
    const fs::path d =
        fs::temp_directory_path() / ("gradscope-trees-cli-" + std::to_string(getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
  }();
  return dir;
}

// Runs `gradscope <args>` in the work folder.
Result run(const std::string& args) {
  const std::string cmd = "cd '" + work().string() + "' && " + GRADSCOPE_CLI + " " + args +
                          " >out.txt 2>err.txt </dev/null";
  const int status = std::system(cmd.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(work() / "out.txt"),
          slurp(work() / "err.txt")};
}

std::string data_path() {
  const char* env = std::getenv("GRADSCOPE_DATA_DIR");
  return std::string(env ? env : GRADSCOPE_DEFAULT_DATA_DIR) + "/breast_cancer.csv";
}

// Two models of breast_cancer (a healthy one and one whose learning rate is 3000 times too
// small), the CSVs the CLI reads, and damaged variants; made once for the suite.
class TreesCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!fs::exists(data_path())) return;
    const auto [train, valid] = split_rows(read_sklearn_csv(data_path()), 0.3, 7);
    write_csv_data((work() / "train.csv").string(), train);
    write_csv_data((work() / "valid.csv").string(), valid);
    XGBoostMatrix mt(train), mv(valid);
    for (const auto& [name, eta, rounds] :
         {std::tuple{"healthy", "0.3", 100}, std::tuple{"stalled", "1e-4", 30}}) {
      XGBoostBooster b({&mt, &mv});
      b.set_params({{"objective", "binary:logistic"},
                    {"eta", eta},
                    {"max_depth", "3"},
                    {"nthread", "1"},
                    {"base_score", "0.5"}});
      for (int i = 0; i < rounds; ++i) b.update(i, mt);
      std::ofstream(work() / (std::string(name) + ".json")) << b.save_json();
      if (std::string(name) == "healthy") {  // XGBoost's own validation logloss, from its margins
        const std::vector<float> m = b.predict(mv, true);
        double s = 0;
        for (std::size_t i = 0; i < valid.rows; ++i) {
          const double p =
              std::min(std::max(1 / (1 + std::exp(-static_cast<double>(m[i]))), 1e-16), 1 - 1e-16);
          s -= valid.y[i] * std::log(p) + (1 - valid.y[i]) * std::log(1 - p);
        }
        xgb_valid_logloss_ = s / static_cast<double>(valid.rows);
      }
    }
    // Damaged inputs: a cell that is not a number, one feature too few, no label column.
    std::string text = slurp(work() / "train.csv");
    // Line 3 of the file (the second row after the header), its third field.
    const std::size_t line3 = text.find('\n', text.find('\n') + 1) + 1;
    const std::size_t comma = text.find(',', text.find(',', line3) + 1);
    std::ofstream(work() / "bad_number.csv")
        << text.substr(0, comma + 1) << "abc" << text.substr(text.find(',', comma + 1));
    TreeData fewer = train;
    fewer.cols = 29;
    fewer.names.pop_back();
    fewer.x.clear();
    for (std::size_t i = 0; i < train.rows; ++i)
      fewer.x.insert(fewer.x.end(), train.row(i), train.row(i) + 29);
    write_csv_data((work() / "fewer.csv").string(), fewer);
    TreeData label_two = train;  // a binary model's logloss takes labels in [0, 1]
    label_two.y[1] = 2;
    write_csv_data((work() / "label_two.csv").string(), label_two);
  }
  static void TearDownTestSuite() { fs::remove_all(work()); }
  void SetUp() override { GRADSCOPE_REQUIRE_DATA(data_path()); }

  static double xgb_valid_logloss_;
};
double TreesCli::xgb_valid_logloss_ = NAN;

const char* kData = "--data train.csv --label label --valid valid.csv";

TEST_F(TreesCli, AHealthyModelExitsZeroAndPrintsWhatTheLibraryMeasured) {
  const Result r = run(std::string("trees healthy.json ") + kData + " --out runs/healthy --json");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  // The agent schema every command shares: the document `report --json` prints of the run,
  // the analysis under "trees".
  const Json whole = Json::parse(r.out);
  EXPECT_EQ(r.out, run("report runs/healthy --json").out);
  EXPECT_EQ(whole.at("findings_version"), 1);
  EXPECT_EQ(whole.at("findings"), Json::array());
  const Json doc = whole.at("trees");
  // The same analysis in this process, from the same files.
  const TreeData train = read_csv_data((work() / "train.csv").string(), "label");
  const TreeData valid = read_csv_data((work() / "valid.csv").string(), "label");
  const TreeDynamicsReport rep =
      analyze_tree_dynamics(read_tree_model((work() / "healthy.json").string()), {&train, &valid});
  EXPECT_EQ(doc.at("model").at("rounds"), 100);
  EXPECT_EQ(doc.at("window"), rep.window);
  EXPECT_TRUE(doc.at("findings").empty());
  for (std::size_t k = 0; k < 100; ++k) {
    EXPECT_EQ(doc.at("rounds").at("valid_loss")[k].get<double>(), rep.per_round[k].valid_loss) << k;
    EXPECT_EQ(doc.at("rounds").at("contribution")[k].get<double>(), rep.per_round[k].contribution)
        << k;
  }
  EXPECT_EQ(doc.at("features")[0].at("share").get<double>(), rep.features[0].share);
  EXPECT_EQ(doc.at("data").at("best_valid_rounds"), rep.best_valid_rounds);
  // And the last round's validation loss is XGBoost's.
  EXPECT_NEAR(doc.at("rounds").at("valid_loss")[99].get<double>(), xgb_valid_logloss_,
              1e-6 * xgb_valid_logloss_);
  EXPECT_TRUE(fs::exists(work() / "runs/healthy/run.db"));
  // One file: the analysis is inside run.db.
  EXPECT_FALSE(fs::exists(work() / "runs/healthy/trees.json"));
  EXPECT_EQ(gradscope::stored_run_documents((work() / "runs/healthy").string()),
            std::vector<std::string>{"trees.json"});

  const Result text =
      run(std::string("trees healthy.json ") + kData + " --out runs/healthy --overwrite");
  EXPECT_EQ(text.code, 0) << text.err;
  EXPECT_THAT(text.out, HasSubstr("rounds in windows of 5"));
  EXPECT_THAT(text.out, HasSubstr("0-4 "));
  EXPECT_THAT(text.out, HasSubstr("findings: 0\n"));
  EXPECT_THAT(text.out, HasSubstr("validation logloss lowest after " +
                                  std::to_string(rep.best_valid_rounds)));
  EXPECT_THAT(text.out, HasSubstr("verdict: healthy: no tree finding"));
}

TEST_F(TreesCli, AStalledModelExitsOneNamingTheFindingAndWhatToDo) {
  const Result r = run(std::string("trees stalled.json ") + kData + " --out runs/stalled");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.out,
              HasSubstr("STAGNANT from round 0: the model barely learned: its 30 rounds removed "));
  EXPECT_THAT(r.out, HasSubstr("raise the learning rate"));
  EXPECT_THAT(r.out, HasSubstr("(threshold 0.05)"));
  EXPECT_THAT(r.out, HasSubstr("verdict: unhealthy: trees: STAGNANT from round 0\n"));
}

TEST_F(TreesCli, ReportLsHtmlAndDiffWorkOnTreeRuns) {
  ASSERT_EQ(run(std::string("trees healthy.json ") + kData + " --out runs2/a").code, 0);
  ASSERT_EQ(run(std::string("trees stalled.json ") + kData + " --out runs2/b").code, 1);

  const Result healthy = run("report runs2/a");
  EXPECT_EQ(healthy.code, 0) << healthy.err;
  EXPECT_THAT(healthy.out, HasSubstr("rounds in windows of 5"));
  EXPECT_THAT(healthy.out, HasSubstr("; trees: no findings"));
  const Result stalled = run("report runs2/b");
  EXPECT_EQ(stalled.code, 1);
  EXPECT_THAT(stalled.out,
              HasSubstr("verdict: unhealthy: trees: STAGNANT from round 0; nodes healthy"));
  const Result json = run("report runs2/b --json");
  EXPECT_EQ(json.code, 1);
  const Json doc = Json::parse(json.out);
  EXPECT_EQ(doc.at("run").at("unhealthy"), true);
  EXPECT_EQ(doc.at("trees").at("findings")[0].at("flag"), "STAGNANT");
  // The agent schema (docs/agent-json.md): the tree finding with the rule's own value,
  // threshold and round; no gradient-flow finding, a tree run records no gradients.
  ASSERT_EQ(doc.at("findings").size(), doc.at("trees").at("findings").size());
  const Json& saved = doc.at("trees").at("findings")[0];
  const Json& finding = doc.at("findings")[0];
  EXPECT_EQ(finding.at("kind"), "trees");
  EXPECT_EQ(finding.at("type"), "STAGNANT");
  EXPECT_EQ(finding.at("node"), "trees");
  EXPECT_EQ(finding.at("since_step"), saved.at("first_round"));
  EXPECT_EQ(finding.at("action"), saved.at("advice"));
  EXPECT_EQ(finding.at("evidence")[0].at("value"), saved.at("value"));
  EXPECT_EQ(finding.at("evidence")[0].at("threshold"), saved.at("threshold"));
  EXPECT_EQ(finding.at("evidence")[0].at("comparison"), "<");
  EXPECT_THAT(finding.at("premise").get<std::string>(),
              HasSubstr(" = " + shown_number(saved.at("value").get<double>()) + " < " +
                        shown_number(saved.at("threshold").get<double>())));
  EXPECT_THAT(finding.at("premise").get<std::string>(), HasSubstr("x the threshold), from round 0 of 30"));
  const Result healthy_json = run("report runs2/a --json");
  EXPECT_EQ(healthy_json.code, 0);
  EXPECT_EQ(Json::parse(healthy_json.out).at("findings"), Json::array());
  const Result check = run("ls runs2 --check --json");
  EXPECT_EQ(check.code, 1);
  EXPECT_EQ(Json::parse(check.out).at("gradscope_ls").at("runs").size(), 2u);
  const Result diff_json = run("diff --json runs2/a runs2/b");
  EXPECT_EQ(diff_json.code, 1);
  const Json diff = Json::parse(diff_json.out);
  EXPECT_EQ(diff.at("findings_new_in_b")[0].at("type"), "STAGNANT");
  EXPECT_EQ(diff.at("gradscope_diff").at("trees")[0].at("change"), "worse");

  const Result ls = run("ls runs2");
  EXPECT_EQ(ls.code, 0);
  EXPECT_THAT(ls.out, HasSubstr("healthy; 100 boosting rounds"));
  EXPECT_THAT(ls.out, HasSubstr("unhealthy; 30 boosting rounds; trees: STAGNANT from round 0"));

  const Result html = run("html runs2/b -o b.html");
  EXPECT_EQ(html.code, 0) << html.err;
  EXPECT_THAT(html.out, HasSubstr("(4 charts)"));
  const std::string page = slurp(work() / "b.html");
  for (const char* part :
       {"id=\"trees\"", "data-chart=\"tree-contribution\"", "data-chart=\"tree-loss\"",
        "data-chart=\"tree-concentration\"", "data-chart=\"tree-features\"",
        "STAGNANT from round 0", "raise the learning rate"})
    EXPECT_THAT(page, HasSubstr(part));
  EXPECT_THAT(page, ::testing::Not(HasSubstr("id=\"flow\"")));  // no gradients in a tree run

  const Result worse = run("diff runs2/a runs2/b");
  EXPECT_EQ(worse.code, 1);
  EXPECT_THAT(worse.out, HasSubstr("STAGNANT      - -> STAGNANT from round 0  worse"));
  const Result better = run("diff runs2/b runs2/a");
  EXPECT_EQ(better.code, 0);
  EXPECT_THAT(better.out, HasSubstr("better"));
}

TEST_F(TreesCli, WithoutDataTheRulesThatNeedRowsSaySo) {
  const Result r = run("trees healthy.json --out runs/nodata");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("data: none"));
  EXPECT_THAT(r.out,
              HasSubstr("not judged:\n  - STAGNANT from the start: needs labelled reference rows"));
  EXPECT_THAT(r.out, HasSubstr("OVERFITTING: needs labelled"));
  EXPECT_THAT(r.out, HasSubstr("not VIF-filtered: no data"));
}

TEST_F(TreesCli, BadInputIsAnErrorNamingTheFile) {
  struct Case {
    std::string args;
    int code;
    std::string message;
  };
  const Case cases[] = {
      {"trees missing.json", 3, "missing.json"},
      {"trees train.csv", 3, "model 'train.csv'"},
      {"trees healthy.json --data bad_number.csv --label label --out runs/x", 3,
       "data file 'bad_number.csv': line 3, column 'f2': \"abc\" is not a finite number"},
      {"trees healthy.json --data train.csv --label target --out runs/x", 3,
       "data file 'train.csv': no column named 'target'"},
      {"trees healthy.json --data fewer.csv --label label --out runs/x", 3,
       "data file 'fewer.csv': 29 feature columns besides the label 'label', the model has 30 "
       "features"},
      {"trees healthy.json --data train.csv --label label --valid label_two.csv --out runs/x", 3,
       "data file 'label_two.csv': row 2: label 2.000000 is outside [0, 1] (a binary model's logloss)"},
      {"trees healthy.json --data train.csv --valid valid.csv --out runs/x", 2,
       "--valid needs --label"},
      {"trees healthy.json --label label --out runs/x", 2,
       "--label names a column of --data or --valid"},
      {"trees healthy.json --window 0", 2, "--window"},
  };
  for (const Case& c : cases) {
    const Result r = run(c.args);
    EXPECT_EQ(r.code, c.code) << c.args << "\n" << r.err;
    EXPECT_THAT(r.err, HasSubstr("gradscope: error: ")) << c.args;
    EXPECT_THAT(r.err, HasSubstr(c.message)) << c.args;
    EXPECT_EQ(r.out, "") << c.args;
  }
  EXPECT_FALSE(fs::exists(work() / "runs/x/run.db"));  // nothing written for bad input
  ASSERT_EQ(run("trees healthy.json --out runs/twice").code, 0);
  const Result again = run("trees healthy.json --out runs/twice");
  EXPECT_EQ(again.code, 3);
  EXPECT_THAT(again.err, HasSubstr("run 'runs/twice' exists: pass --overwrite"));
}

}  // namespace
}  // namespace gradscope
