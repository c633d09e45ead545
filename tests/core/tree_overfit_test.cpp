// OVERFITTING's confidence is calibrated: on validation sets drawn from a model
// that does not overfit, it reaches 0.95 in at most 5% of draws; on planted
// overfitting it rises with the strength. The truth is a closed form: rows at x
// = 0 and x = 1, labels drawn with known probabilities, so the expected
// validation loss of every prefix is known without the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>

#include "gradscope/core/trees/dynamics.h"
#include "tree_builders.h"

namespace gradscope {
namespace {

constexpr int kRounds = 30;
constexpr double kStep =
    0.1; // round k's model: margin +0.1k at x = 1, -0.1k at x = 0

double sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

// Each round pushes x = 1 up and x = 0 down by kStep.
TreeEnsemble pushing() {
  std::vector<Tree> trees;
  for (int32_t r = 0; r < kRounds; ++r)
    trees.push_back(test::stump(r, 0, 0.5, -kStep, kStep));
  return test::ensemble(trees, 1, 1, TreeLink::kSigmoid, "binary:logistic");
}

// `rows` rows, half at x = 0 and half at x = 1; P(y = 1 | x = 1) = q, P(y = 1 |
// x = 0) = 1 - q. Uniforms from the generator's raw bits: the same draws on
// every standard library.
TreeData drawn(std::size_t rows, double q, std::mt19937_64 &gen) {
  TreeData d;
  d.rows = rows;
  d.cols = 1;
  for (std::size_t i = 0; i < rows; ++i) {
    const double x = i % 2 == 0 ? 0.0 : 1.0;
    const double u = static_cast<double>(gen() >> 11) * 0x1p-53;
    d.x.push_back(x);
    d.y.push_back(u < (x == 1 ? q : 1 - q) ? 1.0 : 0.0);
  }
  return d;
}

// The expected per-row logloss of the model of k rounds under labels with
// probability q.
double expected_loss(int k, double q) {
  const double p = sigmoid(kStep * k);
  return -(q * std::log(p) + (1 - q) * std::log(1 - p));
}

// Clean training rows (y = x): the training loss falls every round.
TreeData clean_train() {
  TreeData d;
  d.rows = 200;
  d.cols = 1;
  for (std::size_t i = 0; i < d.rows; ++i) {
    d.x.push_back(i % 2 == 0 ? 0.0 : 1.0);
    d.y.push_back(d.x.back());
  }
  return d;
}

struct Calibration {
  double flagged = 0;   // share of draws with an OVERFITTING finding
  double confident = 0; // share with one at confidence >= 0.95
  double test_095 = 0;  // share whose test (finding or not) reached 0.95
  double mean_test =
      0; // mean of the test's confidence (0 where the best is the end)
  double mean_confidence = 0; // over all draws (0 where there is no finding)
};

Calibration calibrate(double q, std::size_t rows, int draws, uint64_t seed,
                      const TreeThresholds &t = {}) {
  const TreeEnsemble m = pushing();
  const TreeData train = clean_train();
  std::mt19937_64 gen(seed);
  Calibration c;
  for (int i = 0; i < draws; ++i) {
    const TreeData valid = drawn(rows, q, gen);
    const TreeDynamicsReport r = analyze_tree_dynamics(m, {&train, &valid}, t);
    c.test_095 += r.valid_rise_confidence >= kTreeConfident ? 1.0 / draws : 0;
    if (std::isfinite(r.valid_rise_confidence))
      c.mean_test += r.valid_rise_confidence / draws;
    for (const TreeFinding &f : r.findings) {
      if (f.flag != TreeFlag::kOverfitting)
        continue;
      c.flagged += 1.0 / draws;
      c.confident += f.confidence >= kTreeConfident ? 1.0 / draws : 0;
      c.mean_confidence += f.confidence / draws;
    }
  }
  return c;
}

TEST(TreeOverfitCalibration,
     ModelsThatDoNotOverfitReachConfidence095AtMost5Percent) {
  // Labels drawn from the final model's own probabilities: its expected loss is
  // the lowest of all prefixes (logloss is a proper score), so any rise a draw
  // shows is chance.
  const double q = sigmoid(kStep * kRounds);
  for (int k = 0; k < kRounds; ++k)
    ASSERT_GT(expected_loss(k, q), expected_loss(kRounds, q));
  for (const std::size_t rows : {20, 40, 114}) {
    const Calibration c = calibrate(q, rows, 400, 100 + rows);
    std::printf("healthy, %zu validation rows: finding in %.4f of 400 draws, "
                "at confidence >= "
                "0.95 in %.4f; the test alone reached 0.95 in %.4f\n",
                rows, c.flagged, c.confident, c.test_095);
    EXPECT_LE(c.confident, 0.05) << rows << " rows";
    EXPECT_LE(c.test_095, 0.05) << rows << " rows";
  }
  // The hardest null: with overfit_rounds 1 the prefixes just before the end,
  // whose expected loss is nearly the final one's, are compared too; still at
  // most 5% (plus the binomial noise of 400 draws: 2 standard errors, 2.2%).
  TreeThresholds near;
  near.overfit_rounds = 1;
  const Calibration c = calibrate(q, 40, 400, 99, near);
  std::printf(
      "healthy, 40 rows, overfit_rounds 1: the test reached 0.95 in %.4f\n",
      c.test_095);
  EXPECT_LE(c.test_095, 0.072);
}

TEST(TreeOverfitCalibration,
     PlantedOverfittingIsFoundWithConfidenceRisingWithItsStrength) {
  // Labels drawn from the model of k0 rounds: the rounds after k0 make it
  // overconfident. The expected rise from k0 to the end (closed form) grows as
  // k0 falls.
  double last_rise = 0, last_confidence = -1;
  for (const int k0 : {15, 10, 5}) {
    const double q = sigmoid(kStep * k0);
    const double rise = (expected_loss(kRounds, q) - expected_loss(k0, q)) /
                        expected_loss(k0, q);
    const Calibration c =
        calibrate(q, 114, 100, 200 + static_cast<uint64_t>(k0));
    std::printf("planted, labels of round %d (expected rise %.4f), 114 rows: "
                "finding in %.4f, "
                "at confidence >= 0.95 in %.4f, mean confidence %.4f (of the "
                "test alone %.4f)\n",
                k0, rise, c.flagged, c.confident, c.mean_confidence,
                c.mean_test);
    EXPECT_GT(rise, last_rise);
    EXPECT_GT(c.mean_confidence, last_confidence) << "labels of round " << k0;
    last_rise = rise;
    last_confidence = c.mean_confidence;
  }
  EXPECT_GT(last_confidence, 0.9)
      << "the strongest plant is found with high confidence";
}

} // namespace
} // namespace gradscope
