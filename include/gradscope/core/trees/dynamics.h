// Boosted-tree dynamics: a model is a time series (tree i was grown at round i), so each round
// is measured, the rounds are compared, and four rules judge them with evidence.
//
//   gradscope::TreeData train = gradscope::read_csv_data("train.csv", "y");   // trees/
//   gradscope::TreeDynamicsReport r = gradscope::analyze_tree_dynamics(model, {&train, &valid});
//   for (const auto& f : r.findings) std::cout << tree_flag_name(f.flag) << ": " << f.advice;
//   for (const auto& w : r.windows) std::cout << w.first_round << " " << w.contribution;
//
// Per round: the round's output over the reference rows (its contribution: mean and max
// |output|), leaf-value statistics, depth, leaves, gain and cover where the file has them, the
// features split on. Over rounds: leaf velocity (the 1-Wasserstein distance between the
// distributions of consecutive rounds' outputs over the rows), split concentration (HHI of
// the features' gain shares per window), feature-usage drift (total-variation distance between
// consecutive windows' shares), and the training / validation loss after every round. One pass
// over the trees with running sums per row makes all of it O(trees x rows x depth), never a
// prediction per prefix. docs/trees.md has every formula and threshold.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/stats/stats.h"
#include "gradscope/core/trees/data.h"
#include "gradscope/core/trees/flag_info.h"
#include "gradscope/core/trees/interactions.h"
#include "gradscope/core/trees/loss.h"
#include "gradscope/core/trees/model.h"
#include "gradscope/core/trees/thresholds.h"

namespace gradscope {

/// "STAGNANT", "OVERFITTING", "EXPLODING", "CONCENTRATED": the row's name (trees/flag_info.h).
const char* tree_flag_name(TreeFlag flag);

/// One finding with the evidence a reader can check.
struct TreeFinding {
  TreeFlag flag = TreeFlag::kStagnant;
  int32_t first_round = -1;  ///< 0-based round where it begins
  double value = 0;          ///< the measured value the rule compared
  double threshold = 0;      ///< what it was compared with
  std::string measure;       ///< what `value` is
  std::string detail;        ///< the numbers behind it, in words
  std::string advice;        ///< what to do, one sentence naming the round or feature
  int32_t feature = -1;      ///< CONCENTRATED: the feature
  /// The probability, computed by the rule, that the effect is real (OVERFITTING: 1 - p of its
  /// permutation test); NaN for rules that compare a measure with a threshold and have no
  /// model of chance.
  double confidence = std::numeric_limits<double>::quiet_NaN();

  /// A finding whose computed confidence is below kTreeConfident: listed, said to be
  /// uncertain, and not counted against the run (exit 0, healthy()).
  bool tentative() const;
};

/// The computed confidence from which a finding counts against the run.
inline constexpr double kTreeConfident = 0.95;

/// Splits on one feature within one round.
struct FeatureSplits {
  int32_t feature = 0;
  int64_t splits = 0;
  double gain = 0;  ///< sum of the splits' gains (0 when the file has none)
  Stats gains;      ///< the splits' gains, one value each (empty when the file has none)
};

/// One boosting round. Values that need data the analysis did not get are NaN.
struct RoundDynamics {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

  int32_t round = 0;
  int32_t trees = 0, leaves = 0, max_depth = 0;
  std::vector<Stats> leaf_values;       ///< per output: the leaves' values (times a DART weight)
  double leaf_mean_abs = kNone;         ///< mean |leaf value| over every leaf of the round
  double leaf_max_abs = kNone;          ///< max |leaf value| over every leaf of the round
  double gain = kNone;                  ///< sum of the split gains (NaN when the file has none)
  double cover = kNone;                 ///< sum over the round's trees of the root's cover
  std::vector<FeatureSplits> features;  ///< features split on, ascending
  // With reference rows:
  std::vector<Stats> outputs;       ///< per output: the round's outputs over the rows
  double contribution = kNone;      ///< mean |round output| over rows and outputs
  double contribution_max = kNone;  ///< max |round output|
  double velocity = kNone;  ///< W1(this round's outputs, the previous round's), mean over outputs
  // With labels: the model of rounds 0..round (a prefix), as the metric sees it.
  double train_loss = kNone, valid_loss = kNone;
  Stats train_row_loss, valid_row_loss;  ///< per-row losses (squared errors for rmse)
};

/// A window of consecutive rounds.
struct WindowDynamics {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

  int32_t first_round = 0, last_round = 0;  ///< inclusive
  double contribution = kNone;              ///< mean over the rounds of their contribution
  double leaf_mean_abs = kNone;             ///< mean over the rounds of their mean |leaf value|
  double velocity = kNone;                  ///< mean over the rounds that have one
  double hhi = kNone;  ///< sum of squared feature shares (gain, else splits); 1 = one feature
  int32_t top_feature = -1;
  double top_share = kNone;
  double drift = kNone;  ///< 1/2 sum |share - previous window's share| (total variation)
  double train_loss = kNone, valid_loss = kNone;  ///< after the window's last round
};

/// One feature over the whole model.
struct FeatureTotal {
  int32_t feature = 0;
  int64_t splits = 0;
  double gain = 0;
  double share = 0;          ///< of the model's gain (of its splits without gains)
  int32_t first_round = -1;  ///< first round that split on it
};

/// Everything measured and concluded about one model.
struct TreeDynamicsReport {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

  TreeThresholds thresholds;
  std::string dialect, objective, booster;
  int32_t rounds = 0, outputs = 1, num_features = 0, trees_per_round = 0;
  std::vector<std::string> feature_names;  ///< the model's, else the data's, else f0, f1, ...
  bool has_gain = false, has_cover = false;
  TreeLoss loss = TreeLoss::kNone;
  int64_t reference_rows = 0, validation_rows = 0;
  bool reference_labels = false, validation_labels = false;
  double base_train_loss = kNone, base_valid_loss = kNone;  ///< the base score alone (0 rounds)
  int32_t best_valid_rounds =
      -1;  ///< how many rounds give the lowest validation loss (-1: no loss)
  /// The rise of the per-row validation loss from best_valid_rounds to all rounds, in standard
  /// errors of its mean (a paired z); NaN when the best is the whole model.
  double valid_rise_z = kNone;
  /// 1 - p of the permutation test of that rise against every prefix the rule could name
  /// (docs/trees.md, "OVERFITTING's confidence"); NaN when the best is the whole model.
  double valid_rise_confidence = kNone;
  /// The fewest validation rows whose loss increases make up half of the net rise (-1: none).
  int64_t valid_rise_rows = -1;
  /// Misclassified validation rows after best_valid_rounds and after all rounds (-1: the
  /// metric has no classes, or no validation loss).
  int64_t valid_errors_best = -1, valid_errors_last = -1;
  int32_t window = 0;  ///< rounds per window
  std::vector<RoundDynamics> per_round;
  std::vector<WindowDynamics> windows;
  std::vector<FeatureTotal> features;  ///< features split on, most gain (splits) first
  std::vector<TreeFinding>
      findings;  ///< worst first: STAGNANT, OVERFITTING, EXPLODING, CONCENTRATED
  std::vector<std::string> not_judged;  ///< "OVERFITTING: needs validation rows with labels", ...
  InteractionReport interactions;

  /// No finding that counts: tentative ones (TreeFinding::tentative) are listed, not counted.
  bool healthy() const;
  /// The name of feature `f` as the report shows it.
  const std::string& feature_name(int32_t f) const;
};

/// Rows to measure on. `reference` gives the contributions, velocity and (with labels) the
/// training loss; `validation` (labelled) the validation loss. Both optional.
struct TreeDynamicsInput {
  const TreeData* reference = nullptr;
  const TreeData* validation = nullptr;
};

/// Measures and judges `model`. Throws Error when data does not fit the model: a column count
/// other than the model's features ("data: 31 columns, the model has 30 features"), or labels
/// the metric cannot take (check_tree_labels); and for invalid thresholds.
TreeDynamicsReport analyze_tree_dynamics(const TreeEnsemble& model,
                                         const TreeDynamicsInput& input = {},
                                         const TreeThresholds& thresholds = {});

/// The records of one round for the run store (step = round): per output the round's outputs
/// (Site::kRoundOutput) and leaf values (kLeafValue) on node "trees" ("trees/class<k>" for
/// several outputs); per feature split on, the gains of its splits (kSplitGain, node
/// "features/<name>", when the file has gains); the per-row losses (kRowLoss, nodes
/// "loss/train" and "loss/valid").
std::vector<Record> tree_round_records(const TreeDynamicsReport& report, std::size_t round);

}  // namespace gradscope
