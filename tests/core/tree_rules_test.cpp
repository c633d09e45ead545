// The four tree rules on hand-built models whose every round is known: each fires on its
// fault with the right round and value, and stays quiet on the healthy version of the model.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "gradscope/core/trees/dynamics.h"
#include "tree_builders.h"

namespace gradscope {
namespace {

using test::stump;
using ::testing::HasSubstr;

// One feature, x in {0, 1}; stumps split it and push x = 1 up and x = 0 down by step(r).
template <class F>
TreeEnsemble pushing(int32_t rounds, F step, TreeLink link = TreeLink::kSigmoid,
                     const char* objective = "binary:logistic") {
  std::vector<Tree> trees;
  for (int32_t r = 0; r < rounds; ++r) trees.push_back(stump(r, 0, 0.5, -step(r), step(r), 1.0));
  return test::ensemble(trees, 1, 1, link, objective);
}

// `rows` rows, half x = 0 and half x = 1; labels y = x except `flipped` of the x = 1 rows.
TreeData two_points(std::size_t rows, std::size_t flipped = 0) {
  TreeData d;
  d.rows = rows;
  d.cols = 1;
  for (std::size_t i = 0; i < rows; ++i) {
    const double x = i < rows / 2 ? 0.0 : 1.0;
    d.x.push_back(x);
    d.y.push_back(x == 1 && i - rows / 2 < flipped ? 0.0 : x);
  }
  return d;
}

const TreeFinding* find(const TreeDynamicsReport& r, TreeFlag flag) {
  for (const TreeFinding& f : r.findings)
    if (f.flag == flag) return &f;
  return nullptr;
}

TEST(TreeRules, TinyStepsStallFromTheStartAndSaySo) {
  const TreeData d = two_points(100);
  // 50 rounds of margin steps 1e-3: logloss 0.6931 -> log(1 + e^-0.05) = 0.6688, a 3.5% drop.
  const TreeDynamicsReport r = analyze_tree_dynamics(pushing(50, [](int) { return 1e-3; }), {&d});
  const TreeFinding* f = find(r, TreeFlag::kStagnant);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->first_round, 0);
  EXPECT_NEAR(f->value, 1 - std::log1p(std::exp(-0.05)) / std::log(2.0), 1e-6);
  EXPECT_DOUBLE_EQ(f->threshold, 0.05);
  EXPECT_THAT(f->advice, HasSubstr("raise the learning rate"));
  EXPECT_EQ(r.findings.size(), 1u);

  // Steps of 0.1: the same 50 rounds remove 91% of the loss: not stalled.
  const TreeDynamicsReport ok = analyze_tree_dynamics(pushing(50, [](int) { return 0.1; }), {&d});
  EXPECT_EQ(find(ok, TreeFlag::kStagnant), nullptr);
}

TEST(TreeRules, ATailOfNegligibleRoundsAdvisesWhereToStop) {
  const TreeData d = two_points(40);
  // Rounds 0-14 step 0.2, then 1e-4 (0.05% of the busiest window): stop at 15.
  auto step = [](int r) { return r < 15 ? 0.2 : 1e-4; };
  const TreeDynamicsReport r = analyze_tree_dynamics(pushing(40, step), {&d});
  const TreeFinding* f = find(r, TreeFlag::kStagnant);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->first_round, 15);
  EXPECT_NEAR(f->value, 1e-4 / 0.2, 1e-9);
  EXPECT_THAT(f->advice, HasSubstr("keep the first 15 rounds"));
  // The same tail one round shorter than stagnant_rounds (10) is not enough.
  const TreeDynamicsReport short_tail = analyze_tree_dynamics(pushing(24, step), {&d});
  EXPECT_EQ(find(short_tail, TreeFlag::kStagnant), nullptr);
}

TEST(TreeRules, OverfittingStartsWhereTheValidationLossTurns) {
  // Training labels are clean; 30% of validation's x = 1 rows are 0. Validation loss is lowest
  // near margin log(0.7 / 0.3) on x = 1 (and large on x = 0), then rises as the margin grows.
  const TreeData train = two_points(200), valid = two_points(200, 30);
  const TreeEnsemble m = pushing(60, [](int) { return 0.1; });
  const TreeDynamicsReport r = analyze_tree_dynamics(m, {&train, &valid});
  // The turning point, from the closed form: after k rounds the margins are -0.1k and 0.1k.
  auto valid_loss = [](int k) {
    const double z = 0.1 * k;
    const double x0 = std::log1p(std::exp(-z));  // x = 0, y = 0
    const double right = std::log1p(std::exp(-z)), wrong = std::log1p(std::exp(z));
    return (100 * x0 + 70 * right + 30 * wrong) / 200;
  };
  int best = 0;
  for (int k = 1; k <= 60; ++k)
    if (valid_loss(k) < valid_loss(best)) best = k;
  const TreeFinding* f = find(r, TreeFlag::kOverfitting);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->first_round, best);
  EXPECT_EQ(r.best_valid_rounds, best);
  EXPECT_NEAR(f->value, (valid_loss(60) - valid_loss(best)) / valid_loss(best), 1e-5);
  EXPECT_GT(r.valid_rise_z, 3);
  // 30 wrong rows of 200 against 170 that gain: no sign flip of the rows comes near it.
  EXPECT_GE(f->confidence, 0.999);
  EXPECT_FALSE(f->tentative());
  EXPECT_FALSE(r.healthy());

  // Stopped 5 rounds after the turn: fewer than overfit_rounds (10) rounds of rise.
  const TreeDynamicsReport early =
      analyze_tree_dynamics(pushing(best + 5, [](int) { return 0.1; }), {&train, &valid});
  EXPECT_EQ(find(early, TreeFlag::kOverfitting), nullptr);
}

TEST(TreeRules, ALargeRiseOnATinyValidationSetIsATentativeFindingThatSaysWhy) {
  // 4 validation rows; one (x = 1, y = 0) is wrong. Closed form: the mean loss
  // (3 log(1 + e^-z) + log(1 + e^z)) / 4 is lowest where sigmoid(z) = 3/4, z = ln 3 (round 11 of
  // steps 0.1) and 81% higher at z = 4: a large rise, but one row makes all of it, so the
  // paired z is below 3 and 4 rows' signs can be flipped 16 ways: p >= 1/16.
  const TreeData train = two_points(200), valid = two_points(4, 1);
  const TreeDynamicsReport r =
      analyze_tree_dynamics(pushing(40, [](int) { return 0.1; }), {&train, &valid});
  auto mean_loss = [](double z) { return (3 * std::log1p(std::exp(-z)) + std::log1p(std::exp(z))) / 4; };
  EXPECT_EQ(r.best_valid_rounds, 11);
  EXPECT_LT(r.valid_rise_z, 3);
  const TreeFinding* f = find(r, TreeFlag::kOverfitting);
  ASSERT_NE(f, nullptr);
  EXPECT_NEAR(f->value, (mean_loss(4.0) - mean_loss(1.1)) / mean_loss(1.1), 1e-5);
  EXPECT_GT(f->value, r.thresholds.overfit_large_rise);
  EXPECT_LE(f->confidence, 1 - 1.0 / 16 + 1e-12);
  EXPECT_GT(f->confidence, 0);
  EXPECT_TRUE(f->tentative());
  EXPECT_TRUE(r.healthy()) << "a tentative finding does not count against the run";
  EXPECT_EQ(r.valid_rise_rows, 1);
  EXPECT_EQ(r.valid_errors_best, 1);  // the flipped row, at both rounds
  EXPECT_EQ(r.valid_errors_last, 1);
  EXPECT_THAT(f->detail, HasSubstr("1 of 4 rows carry half of the rise"));
  EXPECT_THAT(f->detail, HasSubstr("misclassified validation rows 1 -> 1 of 4: the loss and the "
                                   "errors disagree"));
  EXPECT_THAT(f->advice, HasSubstr("possibly: the validation set (4 rows) is too small"));

  // The same rise with overfit_large_rise above it: nothing below the strict z.
  TreeThresholds strict;
  strict.overfit_large_rise = 1.0;
  const TreeDynamicsReport quiet = analyze_tree_dynamics(
      pushing(40, [](int) { return 0.1; }), {&train, &valid}, strict);
  EXPECT_EQ(find(quiet, TreeFlag::kOverfitting), nullptr);
}

TEST(TreeRules, GrowingStepsExplodeShrinkingOnesDoNot) {
  const TreeData d = two_points(20);
  // Regression margins growing 1.5x a round: window means grow 1.5^5 = 7.6x per window of 5.
  const TreeEnsemble grow = pushing(
      20, [](int r) { return std::pow(1.5, r); }, TreeLink::kIdentity, "reg:squarederror");
  for (const TreeData* data :
       {&d, static_cast<const TreeData*>(nullptr)}) {  // contributions, then leaf values
    const TreeDynamicsReport r = analyze_tree_dynamics(grow, {data});
    const TreeFinding* f = find(r, TreeFlag::kExploding);
    ASSERT_NE(f, nullptr);
    EXPECT_EQ(f->first_round, 5);
    EXPECT_NEAR(f->value, std::pow(1.5, 15),
                1e-6 * std::pow(1.5, 15));  // last window over the first
    EXPECT_THAT(f->measure, HasSubstr(data ? "round output" : "leaf value"));
  }
  const TreeEnsemble shrink = pushing(
      20, [](int r) { return std::pow(0.8, r); }, TreeLink::kIdentity, "reg:squarederror");
  EXPECT_EQ(find(analyze_tree_dynamics(shrink, {&d}), TreeFlag::kExploding), nullptr);
}

// CatBoost's healthy depth-3 model (docs/trees.md, "EXPLODING"): steps shrink to almost nothing
// by round 70, then a few late rounds move again. Every step pushes the rows toward their labels,
// so the training loss falls to the end: a converging model, whose window means still jump
// 100-fold from the quiet windows to the one with the few moving rounds.
TEST(TreeRules, AConvergingModelsLateCorrectionsDoNotExplode) {
  const TreeData d = two_points(20);
  auto converging = [](int r) { return r < 70 ? 0.3 * std::pow(0.93, r) : 2e-4; };
  const TreeEnsemble few =
      pushing(100, [&](int r) { return r == 96 || r == 98 ? 0.05 : converging(r); });
  const TreeDynamicsReport with_labels = analyze_tree_dynamics(few, {&d});
  ASSERT_EQ(with_labels.window, 5);
  const double quiet = with_labels.windows[18].contribution;
  const double late = with_labels.windows[19].contribution;
  EXPECT_GT(late, 50 * quiet);  // the old window rule's growth: far above exploding_growth
  EXPECT_LT(with_labels.per_round[99].train_loss, with_labels.per_round[94].train_loss);
  EXPECT_EQ(find(with_labels, TreeFlag::kExploding), nullptr);
  // Without labels the rounds alone say it: three of the window's five rounds are as quiet as
  // the quiet window's.
  TreeData unlabelled = d;
  unlabelled.y.clear();
  EXPECT_EQ(find(analyze_tree_dynamics(few, {&unlabelled}), TreeFlag::kExploding), nullptr);
  EXPECT_EQ(find(analyze_tree_dynamics(few, {}), TreeFlag::kExploding), nullptr);  // leaf values

  // Late rounds all slightly less tiny (2e-4, then 5e-4 from round 90): every round of the
  // window is above the quiet ones, but the training loss still falls: corrections.
  const TreeEnsemble all = pushing(100, [&](int r) { return r >= 90 ? 5e-4 : converging(r); });
  const TreeDynamicsReport r = analyze_tree_dynamics(all, {&d});
  // 2.5 to float32 leaf precision.
  EXPECT_NEAR(r.windows[18].contribution / r.windows[17].contribution, 2.5, 1e-6);
  EXPECT_EQ(find(r, TreeFlag::kExploding), nullptr);
}

// Steps shrinking 3% a round with a 2-round burst at 4x (rounds 150-151): windows of 2 see the
// burst double the smallest window before it, the rules' windows of 10 (200 rounds) do not.
TEST(TreeRules, TheViewsWindowChangesNoVerdict) {
  const TreeData d = two_points(20);
  const TreeEnsemble burst = pushing(
      200, [](int r) { return (r == 150 || r == 151 ? 4.0 : 1.0) * std::pow(0.97, r); },
      TreeLink::kIdentity, "reg:squarederror");
  const TreeDynamicsReport judged = analyze_tree_dynamics(burst, {&d});
  EXPECT_EQ(judged.window, 10);
  EXPECT_EQ(find(judged, TreeFlag::kExploding), nullptr);
  for (const int window : {2, 5, 7, 50, 200}) {
    SCOPED_TRACE(window);
    TreeThresholds t;
    t.window = window;
    const TreeDynamicsReport r = analyze_tree_dynamics(burst, {&d}, t);
    EXPECT_EQ(r.window, window);  // the views use it
    ASSERT_EQ(r.findings.size(), judged.findings.size());
    for (std::size_t i = 0; i < r.findings.size(); ++i) {
      EXPECT_EQ(r.findings[i].flag, judged.findings[i].flag);
      EXPECT_EQ(r.findings[i].first_round, judged.findings[i].first_round);
      EXPECT_EQ(r.findings[i].detail, judged.findings[i].detail);
      EXPECT_EQ(r.findings[i].value, judged.findings[i].value);
    }
    EXPECT_EQ(r.not_judged, judged.not_judged);
  }
}

TEST(TreeRules, OneFeatureWithMostOfTheGainIsConcentrated) {
  auto model = [](double a, double b) {
    std::vector<Tree> trees;
    for (int32_t r = 0; r < 10; ++r) trees.push_back(stump(r, 0, 0.5, -0.1, 0.1, a));
    trees[3] = stump(3, 1, 0.5, -0.1, 0.1, b * 10);
    TreeEnsemble m = test::ensemble(trees, 2);
    m.feature_names = {"leak", "age"};
    return m;
  };
  // f0: 9 splits of gain 10, f1: one of 5 -> 90/95 = 94.7%.
  const TreeDynamicsReport r = analyze_tree_dynamics(model(10, 0.5));
  const TreeFinding* f = find(r, TreeFlag::kConcentrated);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->feature, 0);
  EXPECT_NEAR(f->value, 90.0 / 95, 1e-12);
  EXPECT_EQ(f->first_round, 0);
  EXPECT_THAT(f->detail, HasSubstr("'leak'"));
  EXPECT_THAT(f->advice, HasSubstr("check 'leak' for leakage"));
  // f1 with gain 30: f0 holds 90 / 120 = 75%: not most.
  EXPECT_EQ(find(analyze_tree_dynamics(model(10, 3)), TreeFlag::kConcentrated), nullptr);
}

TEST(TreeRules, WithoutDataTheRulesThatNeedItSaySo) {
  const TreeDynamicsReport r = analyze_tree_dynamics(pushing(30, [](int) { return 0.1; }));
  EXPECT_TRUE(r.healthy());
  EXPECT_THAT(
      r.not_judged,
      ::testing::Contains(HasSubstr("STAGNANT from the start: needs labelled reference rows")));
  EXPECT_THAT(r.not_judged,
              ::testing::Contains(HasSubstr("STAGNANT later rounds: needs reference rows")));
  EXPECT_THAT(r.not_judged, ::testing::Contains(HasSubstr("OVERFITTING: needs labelled")));
  // A ranking objective has no metric: the loss rules say why, whatever the data.
  const TreeEnsemble rank = pushing(
      30, [](int) { return 0.1; }, TreeLink::kIdentity, "rank:pairwise");
  const TreeData d = two_points(10);
  const TreeDynamicsReport rr = analyze_tree_dynamics(rank, {&d, &d});
  EXPECT_THAT(
      rr.not_judged,
      ::testing::Contains(HasSubstr("OVERFITTING: the objective 'rank:pairwise' has no metric")));
}

TEST(TreeRules, AOneRoundModelIsJudgedOnlyWhereOneRoundSuffices) {
  const TreeData d = two_points(10);
  const TreeDynamicsReport r = analyze_tree_dynamics(pushing(1, [](int) { return 1.0; }), {&d, &d});
  EXPECT_TRUE(r.healthy());
  ASSERT_EQ(r.windows.size(), 1u);
  EXPECT_THAT(r.not_judged,
              ::testing::Contains(HasSubstr("EXPLODING: needs at least 2 windows (1 round")));
  // Its one feature has all the gain by construction: not a finding.
  EXPECT_THAT(r.not_judged,
              ::testing::Contains(HasSubstr("CONCENTRATED: the model has one feature")));
}

}  // namespace
}  // namespace gradscope
