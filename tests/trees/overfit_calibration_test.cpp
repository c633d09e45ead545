// OVERFITTING's confidence on live XGBoost training with small validation sets:
// healthy controls (several data sets and splits) reach confidence 0.95 in at
// most 5% of runs; planted overfitting of rising strength is found with rising
// confidence. The strength is measured independently of the code under test:
// XGBoost's own margins on a large held-out set, the rise of its logloss from
// its best prefix to the whole model.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "../common/require_data.h"
#include "gradscope/core/trees/dynamics.h"
#include "live_training.h"

namespace gradscope {
namespace {

using Params = std::map<std::string, std::string>;

const TreeFinding *overfitting(const TreeDynamicsReport &r) {
  for (const TreeFinding &f : r.findings)
    if (f.flag == TreeFlag::kOverfitting)
      return &f;
  return nullptr;
}

TEST(TreeOverfitLive,
     HealthyControlsOnSmallValidationSetsReachConfidence095AtMost5Percent) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("digits.csv"));
  int runs = 0, flagged = 0, confident = 0;
  for (const char *data : {"breast_cancer", "digits", "diabetes"}) {
    const test::LiveCase c = test::healthy_case(data);
    const TreeData all = test::load_data(c.data);
    // 10% of breast_cancer is 57 validation rows; of digits 180, of
    // diabetes 44.
    for (uint64_t seed = 1; seed <= 12; ++seed) {
      const auto t = test::train_live(all, 0.1, c.params, c.rounds, seed);
      const TreeDynamicsReport r =
          analyze_tree_dynamics(t->model, {&t->train, &t->valid});
      const TreeFinding *f = overfitting(r);
      ++runs;
      flagged += f != nullptr;
      confident += f && f->confidence >= kTreeConfident;
      if (f)
        std::printf("  %s seed %d: OVERFITTING from round %d, rise %.4g, z "
                    "%.4g, confidence %.4g\n",
                    data, static_cast<int>(seed), f->first_round, f->value,
                    r.valid_rise_z, f->confidence);
    }
  }
  std::printf("healthy controls, 10%% validation: %d runs, OVERFITTING in %d, "
              "at confidence >= "
              "0.95 in %d\n",
              runs, flagged, confident);
  EXPECT_LE(confident, runs / 20);
}

// One planted strength over several splits: breast_cancer, 20% of the rows
// (114) to train on with a share of their labels flipped, 114 to validate on,
// the rest (341) held out to measure the truth with XGBoost's own margins. Deep
// trees with no L2 penalty and no minimum child weight memorise every training
// row, flipped ones too: the more flipped, the more held-out rows the model
// ends up confidently wrong on.
struct Planted {
  double holdout_rise =
      0; // mean over splits: XGBoost's logloss, best prefix -> all rounds
  double confidence =
      0; // mean over splits of the finding's confidence (0: no finding)
  int found = 0, confident = 0, splits = 0;
};

Planted planted(double flipped) {
  const Params deep = {{"objective", "binary:logistic"},
                       {"eta", "0.3"},
                       {"max_depth", "8"},
                       {"lambda", "0"},
                       {"min_child_weight", "0"}};
  constexpr int kRounds = 100, kSplits = 8;
  const TreeData all = test::load_data("breast_cancer");
  Planted p;
  for (uint64_t seed = 1; seed <= kSplits; ++seed) {
    auto [rest, train] = split_rows(all, 0.2, seed);
    auto [holdout, valid] = split_rows(rest, 0.125, seed + 100);
    const std::size_t flips =
        static_cast<std::size_t>(flipped * static_cast<double>(train.rows));
    for (std::size_t i = 0; i < flips; ++i)
      train.y[i] = 1 - train.y[i]; // rows are shuffled
    const auto t = test::train_on(train, valid, deep, kRounds);
    const TreeDynamicsReport r =
        analyze_tree_dynamics(t->model, {&t->train, &t->valid});
    XGBoostMatrix held(holdout);
    double best = INFINITY, last = 0;
    for (int k = 1; k <= kRounds; ++k) {
      last = test::logloss(t->booster->predict(held, true, k), holdout.y);
      best = std::min(best, last);
    }
    const TreeFinding *f = overfitting(r);
    p.holdout_rise += (last - best) / best / kSplits;
    p.confidence += (f ? f->confidence : 0) / kSplits;
    p.found += f != nullptr;
    p.confident += f && f->confidence >= kTreeConfident;
    ++p.splits;
  }
  return p;
}

TEST(TreeOverfitLive,
     PlantedOverfittingIsFoundWithConfidenceRisingWithItsStrength) {
  GRADSCOPE_REQUIRE_DATA(test::data_path("breast_cancer.csv"));
  double last_rise = -1, last_confidence = -1;
  for (const double flipped : {0.0, 0.05, 0.1, 0.2}) {
    const Planted m = planted(flipped);
    std::printf("planted, %.0f%% of training labels flipped: held-out rise "
                "%.4g, found in %d of "
                "%d splits (%d at confidence >= 0.95), mean confidence %.4g\n",
                100 * flipped, m.holdout_rise, m.found, m.splits, m.confident,
                m.confidence);
    EXPECT_GT(m.holdout_rise, last_rise) << flipped;
    EXPECT_GT(m.confidence, last_confidence) << flipped;
    last_rise = m.holdout_rise;
    last_confidence = m.confidence;
  }
}

} // namespace
} // namespace gradscope
