// Tree models: reading and evaluating the 992-tree CatBoost fixture and a 1000-round XGBoost
// model (trees per second), and what live tracking (XGBoostLive) costs per round against the
// round's own training time. The live comparison trains two identical boosters side by side,
// round by round (A: update + evaluation, what a training loop with a validation set runs;
// B: the same through XGBoostLive, which also reads the round's trees), so machine load hits
// both alike; a third booster reads every 8 rounds, and the alternative of saving the whole
// model every 8 rounds is timed on a fourth. The last line is one JSON object.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "gradscope/core/trees/data.h"
#include "gradscope/trees/data_files.h"
#include "gradscope/trees/read_model.h"
#include "gradscope/trees/xgboost_api.h"
#include "gradscope/trees/xgboost_live.h"

namespace {

using Clock = std::chrono::steady_clock;
using namespace gradscope;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string data_path(const std::string& name) {
  const char* env = std::getenv("GRADSCOPE_DATA_DIR");
  return std::string(env ? env : GRADSCOPE_DEFAULT_DATA_DIR) + "/" + name;
}

volatile double g_sink = 0;

// Seconds to read `path` and evaluate every row of `rows` (raw scores and predictions).
double read_and_evaluate(const std::string& path, const TreeData& rows, std::size_t* trees) {
  const auto start = Clock::now();
  const TreeEnsemble m = read_tree_model(path);
  for (std::size_t r = 0; r < rows.rows; ++r)
    g_sink = g_sink + transform_scores(m, predict_raw(m, rows.row(r)))[0];
  *trees = m.trees.size();
  return seconds_since(start);
}

struct Phase {
  double read = 0, evaluate = 0;
};

// The read and the evaluation of one model separately (median of `reps`).
Phase time_model(const std::string& path, const TreeData& rows, int reps) {
  std::vector<double> read, evaluate;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    const TreeEnsemble m = read_tree_model(path);
    read.push_back(seconds_since(start));
    start = Clock::now();
    for (std::size_t r = 0; r < rows.rows; ++r)
      g_sink = g_sink + transform_scores(m, predict_raw(m, rows.row(r)))[0];
    evaluate.push_back(seconds_since(start));
  }
  return {median(read), median(evaluate)};
}

TreeData credit_rows(const std::string& tsv) {
  // creditgermany_test.tsv: label, then 20 features, tab-separated.
  TreeData d;
  FILE* f = std::fopen(tsv.c_str(), "r");
  if (!f) {
    std::fprintf(stderr, "trees_bench: cannot read %s\n", tsv.c_str());
    std::exit(3);
  }
  double v = 0;
  std::vector<double> row;
  while (std::fscanf(f, "%lf", &v) == 1) {
    row.push_back(v);
    if (row.size() == 21) {
      d.y.push_back(row[0]);
      d.x.insert(d.x.end(), row.begin() + 1, row.end());
      row.clear();
      ++d.rows;
    }
  }
  std::fclose(f);
  d.cols = 20;
  return d;
}

// One thread: on a shared machine OpenMP's threads wait for each other unpredictably, and the
// comparison is of the same work on both sides anyway.
const std::map<std::string, std::string> kParams = {{"objective", "multi:softprob"},
                                                    {"num_class", "10"},
                                                    {"max_depth", "6"},
                                                    {"eta", "0.3"},
                                                    {"nthread", "1"},
                                                    {"seed", "1"}};

// Seconds each side spent, summed over the rounds of one pass.
struct Live {
  double plain = 0;       // A: update + evaluation, no tracking
  double budget = 0;      // B: XGBoostLive, default schedule (1% budget)
  double every1 = 0;      // C: XGBoostLive reading every round
  double full_save8 = 0;  // D: the alternative: save and parse the whole model every 8 rounds
  int budget_reads = 0;   // reads B made
};

// One pass of `rounds` rounds over the four boosters, interleaved round by round.
Live live_pass(const XGBoostMatrix& train, const XGBoostMatrix& valid, int rounds) {
  Live t;
  XGBoostBooster a({&train, &valid}), b({&train, &valid}), c({&train, &valid}), d({&train, &valid});
  for (XGBoostBooster* x : {&a, &b, &c, &d}) x->set_params(kParams);
  const std::vector<const XGBoostMatrix*> evals = {&train, &valid};
  const std::vector<std::string> names = {"train", "valid"};
  XGBoostLive live(b, {{"train", &train}, {"valid", &valid}});
  XGBoostLive live1(c, {{"train", &train}, {"valid", &valid}}, {1});
  live.on_rounds([&](const TreeEnsemble&, int32_t) { ++t.budget_reads; });
  for (int i = 0; i < rounds; ++i) {
    // The order of the four turns each round, so none always runs first (warmer caches).
    for (int k = 0; k < 4; ++k) {
      const auto start = Clock::now();
      switch ((i + k) % 4) {
        case 0:
          a.update(i, train);
          g_sink = g_sink + a.eval(i, evals, names).size();
          t.plain += seconds_since(start);
          break;
        case 1:
          live.update(i, train);
          t.budget += seconds_since(start);
          break;
        case 2:
          live1.update(i, train);
          t.every1 += seconds_since(start);
          break;
        case 3:
          d.update(i, train);
          g_sink = g_sink + d.eval(i, evals, names).size();
          if ((i + 1) % 8 == 0)
            g_sink = g_sink + parse_xgboost_ubjson(d.save_ubjson(), "whole").trees.size();
          t.full_save8 += seconds_since(start);
          break;
      }
    }
  }
  // What is still unread at the end counts too: a run ends with sync().
  auto start = Clock::now();
  live.sync();
  t.budget += seconds_since(start);
  start = Clock::now();
  live1.sync();
  t.every1 += seconds_since(start);
  if (live.model().trees.size() != static_cast<std::size_t>(rounds) * 10) {
    std::fprintf(stderr, "trees_bench: the tracker read %zu trees\n", live.model().trees.size());
    std::exit(1);
  }
  return t;
}

}  // namespace

int main() {
  const std::string fixtures = GRADSCOPE_TREE_FIXTURE_DIR;
  const std::string credit = fixtures + "/catboost/creditgermany.json";
  const TreeData cancer = read_sklearn_csv(data_path("breast_cancer.csv"));
  const TreeData digits = read_sklearn_csv(data_path("digits.csv"));

  // A 1000-round XGBoost model (binary:logistic, depth 6) on breast_cancer.
  const std::string xgb_path = "/tmp/gradscope-trees-bench-" + std::to_string(::getpid()) + ".json";
  {
    XGBoostMatrix train(cancer);
    XGBoostBooster b({&train});
    b.set_params({{"objective", "binary:logistic"},
                  {"max_depth", "6"},
                  {"eta", "0.05"},
                  {"nthread", "2"},
                  {"seed", "1"}});
    for (int i = 0; i < 1000; ++i) b.update(i, train);
    FILE* f = std::fopen(xgb_path.c_str(), "w");
    const std::string json = b.save_json();
    std::fwrite(json.data(), 1, json.size(), f);
    std::fclose(f);
  }
  const TreeData credit_data = credit_rows(fixtures + "/catboost/creditgermany_test.tsv");

  constexpr int kReps = 5;
  std::size_t credit_trees = 0, xgb_trees = 0;
  std::vector<double> both;
  for (int i = 0; i < kReps; ++i)  // interleaved: one model, then the other
    both.push_back(read_and_evaluate(credit, credit_data, &credit_trees) +
                   read_and_evaluate(xgb_path, cancer, &xgb_trees));
  const double trees_per_s = static_cast<double>(credit_trees + xgb_trees) / median(both);
  const Phase cp = time_model(credit, credit_data, kReps);
  const Phase xp = time_model(xgb_path, cancer, kReps);
  std::remove(xgb_path.c_str());
  std::printf(
      "catboost creditgermany.json: %zu trees, read %.1f ms (%.0f trees/s), %zu rows "
      "evaluated in %.2f ms (%.2f us per row)\n",
      credit_trees, cp.read * 1e3, credit_trees / cp.read, credit_data.rows, cp.evaluate * 1e3,
      cp.evaluate / credit_data.rows * 1e6);
  std::printf(
      "xgboost 1000 rounds (breast_cancer, depth 6): %zu trees, read %.1f ms (%.0f "
      "trees/s), %zu rows evaluated in %.2f ms (%.2f us per row)\n",
      xgb_trees, xp.read * 1e3, xgb_trees / xp.read, cancer.rows, xp.evaluate * 1e3,
      xp.evaluate / cancer.rows * 1e6);
  std::printf("read + evaluate, both models: %.1f ms (median of %d) = %.0f trees/s\n",
              median(both) * 1e3, kReps, trees_per_s);

  // Live tracking: digits, multi:softprob (10 trees a round, depth 6), train and valid evals.
  const auto [train_rows, valid_rows] = split_rows(digits, 0.25, 3);
  const XGBoostMatrix train(train_rows), valid(valid_rows);
  constexpr int kRounds = 100, kPasses = 5;
  std::vector<double> budget, every1, full8, reads;
  double plain = 0;
  for (int p = 0; p < kPasses; ++p) {
    const Live t = live_pass(train, valid, kRounds);
    budget.push_back(t.budget / t.plain);
    every1.push_back(t.every1 / t.plain);
    full8.push_back(t.full_save8 / t.plain);
    reads.push_back(t.budget_reads);
    plain += t.plain;
  }
  std::printf(
      "live tracking, digits multi:softprob depth 6 (10 trees a round), train and valid "
      "evaluated, %d rounds x %d passes; a round of training + evaluation %.2f ms:\n",
      kRounds, kPasses, plain / (kRounds * kPasses) * 1e3);
  const auto show = [](const char* what, const std::vector<double>& r) {
    std::printf("  %-42s %.4fx (median; passes", what, median(r));
    for (const double x : r) std::printf(" %.4f", x);
    std::printf(")\n");
  };
  show("XGBoostLive, default (1% budget):", budget);
  std::printf("    (%.0f reads for %d rounds, median)\n", median(reads), kRounds);
  show("XGBoostLive, every round:", every1);
  show("whole model saved and parsed every 8 rounds:", full8);
  std::printf("{\"bench\":\"trees\",\"live_overhead\":%.4f,\"trees_per_s\":%.0f}\n", median(budget),
              trees_per_s);
  return 0;
}
