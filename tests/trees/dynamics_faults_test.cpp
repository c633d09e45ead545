// Planted faults, trained live with XGBoost on real data, each judged against XGBoost's own
// numbers: its predictions of every prefix of rounds (for losses, contributions and the round
// where the validation loss turned) and its own total-gain importance.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>

#include "../common/require_data.h"
#include "gradscope/core/trees/dynamics.h"
#include "gradscope/core/trees/interactions.h"
#include "live_training.h"

namespace gradscope {
namespace {

using Params = std::map<std::string, std::string>;

const TreeFinding* find(const TreeDynamicsReport& r, TreeFlag flag) {
  for (const TreeFinding& f : r.findings)
    if (f.flag == flag) return &f;
  return nullptr;
}

std::string flags_of(const TreeDynamicsReport& r) {
  std::string out;
  for (const TreeFinding& f : r.findings)
    out += std::string(out.empty() ? "" : ",") + tree_flag_name(f.flag) + "@" +
           std::to_string(f.first_round);
  return out.empty() ? "none" : out;
}

// The metric of XGBoost's own predictions of the first k rounds.
double xgb_loss(const test::Trained& t, bool valid, int k) {
  const TreeData& d = valid ? t.valid : t.train;
  const std::vector<float> p = t.predict(valid, k, true);
  const std::string& obj = t.model.objective;
  if (obj == "binary:logistic") return test::logloss(p, d.y);
  if (obj == "multi:softprob")
    return test::mlogloss(p, d.y, static_cast<std::size_t>(t.model.num_outputs));
  return test::rmse(p, d.y);
}

// Mean |margin after k rounds - margin after k - 1| over the training rows, from XGBoost's
// margins; k = 1 starts from base_score 0.5 (a margin of 0.5 for squared error).
std::vector<double> xgb_contributions(const test::Trained& t, int rounds) {
  std::vector<double> c;
  std::vector<float> before(t.train.rows, 0.5f);
  for (int k = 1; k <= rounds; ++k) {
    const std::vector<float> m = t.predict(false, k, true);
    double s = 0;
    for (std::size_t i = 0; i < m.size(); ++i)
      s += std::fabs(static_cast<double>(m[i]) - before[i]);
    c.push_back(s / static_cast<double>(m.size()));
    before = m;
  }
  return c;
}

TEST(TreeFaults, ATinyLearningRateStallsAndTheLossSaysBy) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("digits.csv"));
  for (const char* data : {"breast_cancer", "digits", "diabetes"}) {
    test::LiveCase c = test::healthy_case(data);
    c.params["eta"] = "1e-4";  // 3,000 (1,000 for diabetes) times smaller than the control's
    const auto t = test::train_live(test::load_data(c.data), 0.3, c.params, c.rounds);
    const TreeDynamicsReport r = analyze_tree_dynamics(t->model, {&t->train, &t->valid});
    // The base score 0.5 alone: p = 0.5 (logistic), uniform over 10 classes (softmax of equal
    // margins), 0.5 for every row (squared error).
    double base = std::log(2.0);
    if (t->model.num_outputs == 10) base = std::log(10.0);
    if (c.data == "diabetes")
      base = test::rmse(std::vector<float>(t->train.rows, 0.5f), t->train.y);
    const double drop = (base - xgb_loss(*t, false, c.rounds)) / base;
    std::cout << c.data << ": training loss drop over " << c.rounds << " rounds " << drop
              << ", flags " << flags_of(r) << "\n";
    ASSERT_EQ(r.findings.size(), 1u) << c.data << ": " << flags_of(r);
    const TreeFinding& f = r.findings[0];
    EXPECT_EQ(f.flag, TreeFlag::kStagnant);
    EXPECT_EQ(f.first_round, 0);
    EXPECT_NEAR(f.value, drop, 1e-5) << c.data;
    EXPECT_LT(drop, 0.05) << c.data;
    EXPECT_GT(drop, 0) << c.data;  // it learned, slowly: stalled, not broken
  }
}

// A label copy in an extra column "leak" (noise of `noise` label sd), trained with the
// control's settings, its analysis, and the copy's share of XGBoost's own total gain.
struct LeakRun {
  TreeData data;
  std::unique_ptr<test::Trained> trained;
  TreeDynamicsReport report;
  double share = 0;
};

LeakRun leak_run(const std::string& data, double noise) {
  LeakRun run;
  run.data = test::with_leak(test::load_data(data), noise, 3);
  const test::LiveCase c = test::healthy_case(data);
  run.trained = test::train_live(run.data, 0.3, c.params, c.rounds);
  run.report =
      analyze_tree_dynamics(run.trained->model, {&run.trained->train, &run.trained->valid});
  run.share = test::total_gain_shares(*run.trained->booster, run.data.cols)[run.data.cols - 1];
  std::cout << data << ": a copy with noise of " << noise << " label sd takes " << run.share
            << " of XGBoost's total gain; flags " << flags_of(run.report) << "\n";
  return run;
}

TEST(TreeFaults, ALabelCopyWithNoiseConcentratesTheGainOnItsColumn) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("breast_cancer.csv"));
  for (const char* data : {"breast_cancer", "diabetes"}) {
    // Noise of a quarter of the label's sd: a noisy copy, correlation about 0.97.
    const LeakRun run = leak_run(data, 0.25);
    const int32_t leak = static_cast<int32_t>(run.data.cols - 1);
    TreeData xy = run.data;  // the copy against the label, as two columns
    xy.cols = 2;
    xy.x.clear();
    for (std::size_t i = 0; i < run.data.rows; ++i)
      xy.x.insert(xy.x.end(), {run.data.row(i)[leak], run.data.y[i]});
    const double corr = column_correlation(xy, 0, 1);
    std::cout << data << ": the copy's correlation with the label " << corr << "\n";
    EXPECT_GT(corr, 0.9);
    const TreeFinding* f = find(run.report, TreeFlag::kConcentrated);
    ASSERT_NE(f, nullptr) << data << ": " << flags_of(run.report);
    EXPECT_EQ(f->feature, leak);
    EXPECT_EQ(run.report.feature_name(f->feature), "leak");
    EXPECT_THAT(f->advice, ::testing::HasSubstr("check 'leak' for leakage"));
    // XGBoost sums its gains in float: equal to float precision.
    EXPECT_NEAR(f->value, run.share, 1e-5) << data;
    EXPECT_GT(run.share, 0.9);
  }
}

TEST(TreeFaults, ALabelCopyNoBetterThanTheRealFeaturesIsBeyondTheRule) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("digits.csv"));
  // The rule's documented limits: gain cannot tell a copy that is no better than the real
  // features from them (noise of one label sd on breast_cancer), and in a multiclass model each
  // class needs its own splits on a copy of the class index, so the copy's share of the gain
  // stays below most even with little noise.
  for (const auto& [data, noise] : {std::pair{"breast_cancer", 1.0}, std::pair{"digits", 0.1}}) {
    const LeakRun run = leak_run(data, noise);
    EXPECT_LT(run.share, run.report.thresholds.concentrated_share);
    EXPECT_EQ(find(run.report, TreeFlag::kConcentrated), nullptr);
  }
}

TEST(TreeFaults, DeepUnregularisedTreesOnASmallSplitOverfitWhereValidationLossTurned) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("digits.csv"));
  // A fifth of the rows to train on; depth 8 with no L2 penalty and no minimum child weight, so
  // the trees keep fitting the training rows after the validation loss stops improving.
  const Params deep = {
      {"eta", "0.3"}, {"max_depth", "8"}, {"lambda", "0"}, {"min_child_weight", "0"}};
  Params binary = deep, multi = deep;
  binary["objective"] = "binary:logistic";
  multi["objective"] = "multi:softprob";
  multi["num_class"] = "10";
  const test::LiveCase cases[] = {{"breast_cancer", binary, 200}, {"digits", multi, 60}};
  for (const test::LiveCase& c : cases) {
    const auto t = test::train_live(test::load_data(c.data), 0.8, c.params, c.rounds);
    const TreeDynamicsReport r = analyze_tree_dynamics(t->model, {&t->train, &t->valid});
    // XGBoost's validation curve, and where it is lowest.
    std::vector<double> v(static_cast<std::size_t>(c.rounds) + 1);
    int best = 1;
    for (int k = 1; k <= c.rounds; ++k) {
      v[static_cast<std::size_t>(k)] = xgb_loss(*t, true, k);
      if (v[static_cast<std::size_t>(k)] < v[static_cast<std::size_t>(best)]) best = k;
      EXPECT_NEAR(r.per_round[static_cast<std::size_t>(k - 1)].valid_loss,
                  v[static_cast<std::size_t>(k)], 1e-4 * v[static_cast<std::size_t>(k)])
          << c.data << " round " << k;
    }
    double runner_up = INFINITY;
    for (int k = 1; k <= c.rounds; ++k)
      if (k != best) runner_up = std::min(runner_up, v[static_cast<std::size_t>(k)]);
    const double rise =
        (v.back() - v[static_cast<std::size_t>(best)]) / v[static_cast<std::size_t>(best)];
    std::cout << c.data << ": XGBoost's validation loss lowest after " << best << " rounds ("
              << v[static_cast<std::size_t>(best)] << "), " << v.back() << " after " << c.rounds
              << "; paired z " << r.valid_rise_z << "; top feature share " << r.features[0].share
              << "; flags " << flags_of(r) << "; XGBoost's own log: "
              << t->booster->eval(c.rounds - 1, {t->valid_m.get()}, {"valid"}) << "\n";
    // The turn is a real minimum, not a tie our float rounding could move.
    ASSERT_GT(runner_up - v[static_cast<std::size_t>(best)],
              1e-4 * v[static_cast<std::size_t>(best)]);
    const TreeFinding* f = find(r, TreeFlag::kOverfitting);
    ASSERT_NE(f, nullptr) << c.data << ": " << flags_of(r);
    EXPECT_EQ(f->first_round, best) << c.data;
    EXPECT_EQ(r.best_valid_rounds, best);
    EXPECT_NEAR(f->value, rise, 1e-4 * rise);
    EXPECT_LT(xgb_loss(*t, false, c.rounds), xgb_loss(*t, false, best)) << "training loss fell";
    EXPECT_GT(r.valid_rise_z, r.thresholds.overfit_z);
    EXPECT_EQ(find(r, TreeFlag::kConcentrated), nullptr) << c.data;
    EXPECT_EQ(find(r, TreeFlag::kExploding), nullptr) << c.data;
  }
}

TEST(TreeFaults, TheOverfitModelsNegligibleTailIsWhereXGBoostsOwnMarginsStopMoving) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("breast_cancer.csv"));
  const Params deep = {{"objective", "binary:logistic"},
                       {"eta", "0.3"},
                       {"max_depth", "8"},
                       {"lambda", "0"},
                       {"min_child_weight", "0"}};
  const int rounds = 200;
  const auto t = test::train_live(test::load_data("breast_cancer"), 0.8, deep, rounds);
  const TreeDynamicsReport r = analyze_tree_dynamics(t->model, {&t->train, &t->valid});
  // The logistic margin starts at logit(0.5) = 0, not 0.5.
  std::vector<double> c;
  std::vector<float> before(t->train.rows, 0.0f);
  for (int k = 1; k <= rounds; ++k) {
    const std::vector<float> m = t->predict(false, k, true);
    double s = 0;
    for (std::size_t i = 0; i < m.size(); ++i)
      s += std::fabs(static_cast<double>(m[i]) - before[i]);
    c.push_back(s / static_cast<double>(m.size()));
    before = m;
    EXPECT_NEAR(r.per_round[static_cast<std::size_t>(k - 1)].contribution, c.back(),
                1e-5 + 1e-4 * c.back());
  }
  // The rule's definition applied to XGBoost's numbers: windows of r.window, the busiest
  // window's mean, the tail below 1% of it.
  double peak = 0;
  for (const WindowDynamics& w : r.windows) {
    double s = 0;
    for (int32_t k = w.first_round; k <= w.last_round; ++k) s += c[static_cast<std::size_t>(k)];
    peak = std::max(peak, s / (w.last_round - w.first_round + 1));
  }
  int start = rounds;
  while (start > 0 && c[static_cast<std::size_t>(start - 1)] < 0.01 * peak) --start;
  std::cout << "breast_cancer deep: margins move < 1% of the busiest window from round " << start
            << "\n";
  const TreeFinding* f = find(r, TreeFlag::kStagnant);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->first_round, start);
  EXPECT_GE(rounds - start, r.thresholds.stagnant_rounds);
}

TEST(TreeFaults, ALearningRateAboveTwoExplodesFromTheFirstGrowingWindow) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("diabetes.csv"));
  // Squared error with eta 2.5: each round overshoots the residual by 1.5x, so the steps grow.
  const Params params = {{"objective", "reg:squarederror"}, {"eta", "2.5"}, {"max_depth", "2"}};
  const int rounds = 30;
  const auto t = test::train_live(test::load_data("diabetes"), 0.3, params, rounds);
  const TreeDynamicsReport r = analyze_tree_dynamics(t->model, {&t->train, &t->valid});
  const std::vector<double> c = xgb_contributions(*t, rounds);
  for (int k = 0; k < rounds; ++k)
    EXPECT_NEAR(r.per_round[static_cast<std::size_t>(k)].contribution,
                c[static_cast<std::size_t>(k)], 1e-4 * c[static_cast<std::size_t>(k)]);
  // The rule's definition on XGBoost's steps and losses: the first window whose mean is above
  // twice the smallest window mean before it, each of whose rounds moved more than any round of
  // that smallest window, and over which XGBoost's training loss rose.
  std::vector<double> means, lows, highs;
  for (const WindowDynamics& w : r.windows) {
    const auto first = c.begin() + w.first_round, end = c.begin() + w.last_round + 1;
    means.push_back(std::accumulate(first, end, 0.0) / static_cast<double>(end - first));
    lows.push_back(*std::min_element(first, end));
    highs.push_back(*std::max_element(first, end));
  }
  std::size_t low = 0, first = 0;
  double ratio = 0;
  for (std::size_t w = 1; w < means.size(); ++w) {
    const bool rose = xgb_loss(*t, false, r.windows[w].last_round + 1) >
                      xgb_loss(*t, false, r.windows[w].first_round);
    if (means[w] > 2 * means[low] && lows[w] > highs[low] && rose) {
      ratio = std::max(ratio, means[w] / means[low]);
      if (first == 0) first = w;
    }
    if (means[w] < means[low]) low = w;
  }
  std::cout << "diabetes eta 2.5: step growth " << ratio << " from window " << first << ", flags "
            << flags_of(r) << "\n";
  ASSERT_GT(first, 0u);
  const TreeFinding* f = find(r, TreeFlag::kExploding);
  ASSERT_NE(f, nullptr) << flags_of(r);
  EXPECT_EQ(f->first_round, r.windows[first].first_round);
  EXPECT_NEAR(f->value, ratio, 1e-4 * ratio);
  // Gain shares of a diverging model are its last rounds': not read as leakage.
  EXPECT_EQ(find(r, TreeFlag::kConcentrated), nullptr);
  EXPECT_THAT(r.not_judged,
              ::testing::Contains(::testing::HasSubstr("CONCENTRATED: the gain of an exploding")));
}

}  // namespace
}  // namespace gradscope
