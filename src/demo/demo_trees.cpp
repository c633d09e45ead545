// The demo's tree runs. The settings are the tests' (tests/trees/live_training.h): the healthy
// control of docs/trees.md, and its overfit fault (a fifth of the rows to train on, depth 8,
// no L2 penalty, no minimum child weight), whose OVERFITTING round the tests check against
// XGBoost's own validation curve.
#include "demo_trees.h"

#include <chrono>
#include <cstdio>
#include <iostream>
#include <map>

#include "gradscope/core/trees/data.h"
#include "gradscope/io/trees/text.h"
#include "gradscope/trees/data_files.h"
#include "gradscope/trees/xgboost_recorder.h"
#include "html_report.h"
#include "report_text.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

namespace fs = std::filesystem;

struct TreeVariant {
  const char* name;
  const char* planted;
  double valid_fraction;
  int rounds;
  std::map<std::string, std::string> params;
};

const TreeVariant kVariants[] = {
    {"trees-healthy", "healthy control: eta 0.3, depth 3, 70% of the rows to train on", 0.3, 100,
     {{"eta", "0.3"}, {"max_depth", "3"}}},
    {"trees-overfit",
     "planted: depth 8, no L2 penalty, no minimum child weight, 20% of the rows to train on", 0.8,
     200, {{"eta", "0.3"}, {"max_depth", "8"}, {"lambda", "0"}, {"min_child_weight", "0"}}},
};

std::string run_variant(const TreeData& all, const TreeVariant& v, const std::string& out_dir,
                        uint64_t seed, std::vector<fs::path>& pages) {
  const auto start = std::chrono::steady_clock::now();
  const auto [train, valid] = split_rows(all, v.valid_fraction, 7);
  XGBoostMatrix train_m(train), valid_m(valid);
  XGBoostBooster booster({&train_m, &valid_m});
  std::map<std::string, std::string> params = v.params;
  params.emplace("objective", "binary:logistic");
  params.emplace("base_score", "0.5");
  params.emplace("nthread", "2");
  params.emplace("seed", std::to_string(seed % 2147483647));
  booster.set_params(params);
  const fs::path dir = fs::path(out_dir) / ("demo-" + std::string(v.name));
  XGBoostRecorderOptions options;
  options.writer.name = "demo-" + std::string(v.name);
  options.writer.command_line = command_line();
  options.writer.overwrite = true;
  options.data_name = "breast_cancer.csv, " + std::to_string(train.rows) + " training rows";
  options.validation_name = "breast_cancer.csv, " + std::to_string(valid.rows) + " validation rows";
  options.label = "target";
  XGBoostRecorder recorder(booster, dir.string(), {&train, &valid}, options);
  for (int i = 0; i < v.rounds; ++i) recorder.update(i, train_m);
  const TreeRunSummary& s = recorder.finish();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const std::string verdict = tree_run_verdict(s);
  const std::string text = render_tree_findings(s) + "\n" + verdict + "\n";
  write_run_reports(dir.string());  // what `gradscope report RUN` prints
  pages.push_back(dir / "report.html");
  write_html_report(load_run(dir.string(), false, {}, /*series=*/true), pages.back().string());
  const double loss = s.report.per_round.back().valid_loss;
  std::printf("\n== %s: XGBoost on breast_cancer, %s; %d rounds trained live, %.1f s\n",
              v.name, v.planted, v.rounds, seconds);
  std::cout << text;
  char line[256];
  std::snprintf(line, sizeof line, "  %-24s valid logloss %.3f  ", v.name, loss);
  return line + verdict;
}

}  // namespace

std::vector<std::string> run_tree_demo(const std::string& data_dir, const std::string& out_dir,
                                       uint64_t seed, std::vector<fs::path>& pages) {
  const fs::path file = fs::path(data_dir) / "breast_cancer.csv";
  if (!fs::exists(file)) {
    std::cout << "\nbreast_cancer.csv not found in " << data_dir
              << " (run scripts/fetch-data.sh): the boosted-tree runs are skipped\n";
    return {};
  }
  const TreeData all = read_sklearn_csv(file.string());
  std::vector<std::string> lines;
  for (const TreeVariant& v : kVariants) lines.push_back(run_variant(all, v, out_dir, seed, pages));
  return lines;
}

}  // namespace gradscope::cli
