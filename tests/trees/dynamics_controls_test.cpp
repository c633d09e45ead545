// Healthy controls on the three real data sets (no finding), and the edge cases: a one-round
// model, no data, multiclass records; every loss tied to XGBoost's own predictions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>
#include <set>

#include "../common/require_data.h"
#include "gradscope/core/audit/rules.h"
#include "gradscope/core/trees/dynamics.h"
#include "live_training.h"

namespace gradscope {
namespace {

using ::testing::Contains;
using ::testing::HasSubstr;
using Params = std::map<std::string, std::string>;

double xgb_metric(const test::Trained& t, int k) {
  const std::vector<float> p = t.predict(true, k, true);
  if (t.model.num_outputs > 1)
    return test::mlogloss(p, t.valid.y, static_cast<std::size_t>(t.model.num_outputs));
  return t.model.objective == "binary:logistic" ? test::logloss(p, t.valid.y)
                                                : test::rmse(p, t.valid.y);
}

TEST(TreeControls, HealthyModelsOnRealDataRaiseNoFinding) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("digits.csv"));
  for (const char* data : {"breast_cancer", "digits", "diabetes"}) {
    const test::LiveCase c = test::healthy_case(data);
    const auto t = test::train_live(test::load_data(c.data), 0.3, c.params, c.rounds);
    const TreeDynamicsReport r = analyze_tree_dynamics(t->model, {&t->train, &t->valid});
    const RoundDynamics& last = r.per_round.back();
    double peak = 0;
    for (const WindowDynamics& w : r.windows) peak = std::max(peak, w.contribution);
    const double best_valid = r.best_valid_rounds == 0
                                  ? r.base_valid_loss
                                  : r.per_round[r.best_valid_rounds - 1].valid_loss;
    std::cout << c.data << ": training loss drop "
              << (r.base_train_loss - last.train_loss) / r.base_train_loss << ", last round moves "
              << last.contribution / peak << " of the busiest window, validation "
              << "best after " << r.best_valid_rounds << " rounds, rise "
              << (last.valid_loss - best_valid) / best_valid << " (z " << r.valid_rise_z
              << "), top feature share " << r.features[0].share << "\n";
    EXPECT_TRUE(r.findings.empty())
        << c.data << ": " << tree_flag_name(r.findings[0].flag) << " " << r.findings[0].detail;
    EXPECT_TRUE(r.not_judged.empty()) << c.data << ": " << r.not_judged[0];
    // The losses are XGBoost's: first, middle and last round.
    for (const int k : {1, c.rounds / 2, c.rounds})
      EXPECT_NEAR(r.per_round[static_cast<std::size_t>(k - 1)].valid_loss, xgb_metric(*t, k),
                  1e-5 * xgb_metric(*t, k))
          << c.data << " round " << k;
    EXPECT_EQ(r.outputs, t->model.num_outputs);
    EXPECT_EQ(r.per_round[0].outputs.size(), static_cast<std::size_t>(r.outputs));
    EXPECT_EQ(r.reference_rows, static_cast<int64_t>(t->train.rows));
  }
}

TEST(TreeControls, RandomLabelsAreMemorisedNotStalled) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("breast_cancer.csv"));
  // The stall threshold's control: with labels that carry nothing, a working learning rate
  // still fits the training rows, so the training loss falls well past 5%, even with shallow
  // trees and few rounds. (Validation loss rises: that is OVERFITTING's business.)
  TreeData noise = test::load_data("breast_cancer");
  std::mt19937_64 gen(11);
  for (double& y : noise.y) y = static_cast<double>(gen() % 2);
  const auto t = test::train_live(
      noise, 0.3, {{"objective", "binary:logistic"}, {"eta", "0.1"}, {"max_depth", "2"}}, 20);
  const TreeDynamicsReport r = analyze_tree_dynamics(t->model, {&t->train, &t->valid});
  const double drop = (r.base_train_loss - r.per_round.back().train_loss) / r.base_train_loss;
  std::cout << "random labels, eta 0.1, depth 2, 20 rounds: training loss drop " << drop << "\n";
  EXPECT_GT(drop, 2 * r.thresholds.stall_loss_drop);
  for (const TreeFinding& f : r.findings) EXPECT_NE(f.flag, TreeFlag::kStagnant);
}

TEST(TreeControls, AValidationRiseWithinItsNoiseIsNotOverfitting) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("diabetes.csv"));
  // Depth 3 for 100 rounds on diabetes: validation RMSE is lowest after 36 rounds and 2.7%
  // higher at the end, above overfit_rise, but the rise per row is about one standard error.
  const auto t = test::train_live(
      test::load_data("diabetes"), 0.3,
      {{"objective", "reg:squarederror"}, {"eta", "0.1"}, {"max_depth", "3"}}, 100);
  const TreeDynamicsReport r = analyze_tree_dynamics(t->model, {&t->train, &t->valid});
  const double best = r.per_round[static_cast<std::size_t>(r.best_valid_rounds - 1)].valid_loss;
  const double rise = (r.per_round.back().valid_loss - best) / best;
  std::cout << "diabetes depth 3: validation lowest after " << r.best_valid_rounds
            << " rounds, rise " << rise << ", paired z " << r.valid_rise_z << "\n";
  EXPECT_GT(rise, r.thresholds.overfit_rise);
  EXPECT_LT(r.valid_rise_z, r.thresholds.overfit_z);
  for (const TreeFinding& f : r.findings) EXPECT_NE(f.flag, TreeFlag::kOverfitting);
}

TEST(TreeControls, MulticlassRoundsRecordEveryClass) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("digits.csv"));
  const test::LiveCase c = test::healthy_case("digits");
  const auto t = test::train_live(test::load_data(c.data), 0.3, c.params, 5);
  const TreeDynamicsReport r = analyze_tree_dynamics(t->model, {&t->train, &t->valid});
  EXPECT_EQ(r.trees_per_round, 10);
  EXPECT_EQ(r.per_round[4].trees, 10);
  std::vector<Record> all;
  for (std::size_t k = 0; k < 5; ++k)
    for (const Record& rec : tree_round_records(r, k)) all.push_back(rec);
  const Report report = build_report(all);
  std::set<std::string> classes;
  for (const NodeReport& n : report.nodes)
    if (n.node.rfind("trees/class", 0) == 0) classes.insert(n.node);
  EXPECT_EQ(classes.size(), 10u);
  EXPECT_TRUE(report.healthy());
  // Each class's round output over the rows is what XGBoost's margins moved by in that round.
  const std::vector<float> m4 = t->predict(false, 4, true), m5 = t->predict(false, 5, true);
  double moved = 0;
  for (std::size_t i = 0; i < t->train.rows; ++i)
    moved += static_cast<double>(m5[i * 10 + 3]) - m4[i * 10 + 3];
  EXPECT_NEAR(r.per_round[4].outputs[3].mean(), moved / static_cast<double>(t->train.rows), 1e-5);
}

TEST(TreeControls, AOneRoundModelIsHealthyAndSaysWhatOneRoundCannotShow) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("breast_cancer.csv"));
  const auto t = test::train_live(test::load_data("breast_cancer"), 0.3,
                                  test::healthy_case("breast_cancer").params, 1);
  const TreeDynamicsReport r = analyze_tree_dynamics(t->model, {&t->train, &t->valid});
  EXPECT_EQ(r.rounds, 1);
  EXPECT_TRUE(r.findings.empty()) << tree_flag_name(r.findings[0].flag);
  ASSERT_EQ(r.windows.size(), 1u);
  EXPECT_THAT(r.not_judged, Contains(HasSubstr("EXPLODING: needs at least 2 windows (1 round")));
  EXPECT_NEAR(r.per_round[0].valid_loss, xgb_metric(*t, 1), 1e-5);
  EXPECT_TRUE(std::isnan(r.per_round[0].velocity));  // no round before it
}

TEST(TreeControls, WithoutDataTheModelOnlyRulesStillJudge) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("breast_cancer.csv"));
  const auto t = test::train_live(test::load_data("breast_cancer"), 0.3,
                                  test::healthy_case("breast_cancer").params, 100);
  const TreeDynamicsReport r = analyze_tree_dynamics(t->model);
  EXPECT_TRUE(r.findings.empty());
  EXPECT_EQ(r.reference_rows, 0);
  EXPECT_TRUE(std::isnan(r.per_round[10].contribution));
  EXPECT_GT(r.per_round[10].leaf_mean_abs, 0);
  EXPECT_THAT(r.not_judged,
              Contains(HasSubstr("STAGNANT from the start: needs labelled reference rows")));
  EXPECT_THAT(r.not_judged, Contains(HasSubstr("STAGNANT later rounds: needs reference rows")));
  EXPECT_THAT(r.not_judged, Contains(HasSubstr("OVERFITTING: needs labelled")));
  EXPECT_EQ(r.not_judged.size(), 3u);  // EXPLODING reads leaf values, CONCENTRATED gains
  EXPECT_FALSE(r.interactions.filtered);
  EXPECT_FALSE(r.interactions.kept.empty());
  // With data the same model's interactions carry their VIF.
  const TreeDynamicsReport with = analyze_tree_dynamics(t->model, {&t->train});
  EXPECT_TRUE(with.interactions.filtered);
  for (const InteractionPair& p : with.interactions.kept)
    EXPECT_LE(p.vif, r.thresholds.interaction_vif);
}

}  // namespace
}  // namespace gradscope
