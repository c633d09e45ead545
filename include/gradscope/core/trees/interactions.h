// Interaction suggestions for a boosted model: feature pairs the trees use together, ranked by
// the gain they carry together, with pairs of collinear features dropped.
//
//   gradscope::InteractionReport r = gradscope::suggest_interactions(model, &data, {});
//   for (const auto& p : r.kept)
//     std::cout << p.a << " x " << p.b << ": gain " << p.gain << ", VIF " << p.vif << "\n";
//
// A pair (a, b) co-occurs when a split on one lies below a split on the other on a root-to-leaf
// path: the lower split found gain inside the region the upper one carved, which is what an
// interaction is to a tree. Each split credits every distinct other feature split on above it,
// up to kInteractionReach levels up, once, with its own gain (a count of 1 when the file has no
// gains). CatBoost's oblivious trees split every path the same way, so each level credits the
// features of the levels above (as far). The reach keeps the work linear in the size of the
// model: a 100,000-deep chain of splits on distinct features has 5e9 pairs of ancestors. The
// variance inflation factor of a pair, 1 / (1 - r^2) with r the Pearson correlation of the two
// columns over the data, is the VIF of either feature regressed on the other; above
// TreeThresholds::interaction_vif the two carry the same signal and the "interaction" is the
// trees splitting one signal twice. So near-duplicate features are merged before the pairs are
// formed (listed as merged: one signal's partners are one suggestion, not one per copy), and a
// collinear pair left among the rest is dropped (and listed as dropped).
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "gradscope/core/trees/data.h"
#include "gradscope/core/trees/model.h"
#include "gradscope/core/trees/thresholds.h"

namespace gradscope {

/// How many levels above a split its interactions are looked for: deeper than any tree the
/// libraries grow by default (XGBoost's max_depth 6, LightGBM's 31 leaves, CatBoost's depth 6).
constexpr int kInteractionReach = 64;

/// One pair of features, a < b.
struct InteractionPair {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

  int32_t a = 0, b = 0;
  double gain = 0;             ///< gain of the lower splits (their count without gains)
  double share = 0;            ///< of all pairs' gain
  int64_t count = 0;           ///< lower splits crediting the pair
  int64_t trees = 0;           ///< trees holding at least one
  double correlation = kNone;  ///< Pearson r over the rows where both are present (NaN: no data)
  double vif = kNone;          ///< 1 / (1 - r^2); +Inf for |r| = 1
  /// Cross-validated held-out loss reduction of the pair's interaction term over the additive
  /// model without it, relative (test_interactions; NaN: not tested).
  double cv_gain = kNone;
  /// One-sided paired p-value of that reduction over the rows, Bonferroni-corrected for the pairs
  /// tested (NaN: not tested).
  double p_value = kNone;
};

/// The suggestions and what the filter removed.
struct InteractionReport {
  bool by_gain = false;               ///< ranked by gain (false: by count, the file has no gains)
  bool filtered = false;              ///< VIF computed (data given)
  int64_t pairs = 0;                  ///< distinct pairs seen
  std::vector<InteractionPair> kept;  ///< best first, at most max_interactions
  std::vector<InteractionPair> dropped;  ///< collinear pairs that ranked above the last kept one
  /// Near-duplicate features merged before the pairs were formed: feature a merged into b (the
  /// one with more split gain), with the columns' r and VIF (above interaction_vif).
  std::vector<InteractionPair> merged;
  /// Whether the kept pairs were tested on labelled rows (test_interactions): then `kept`
  /// holds only the pairs with evidence and `no_evidence` the others.
  bool tested = false;
  int64_t test_rows = 0;                     ///< rows the test used
  std::vector<InteractionPair> no_evidence;  ///< tested, did not improve the held-out loss
};

/// How the pairs are tested: the labels' model.
enum class InteractionModel : uint8_t { kLogistic, kLeastSquares };

/// Ridge and fold settings of test_interactions (docs/trees.md, "Testing a pair").
inline constexpr int kInteractionFolds = 5;
inline constexpr double kInteractionAlpha = 0.05;  ///< Bonferroni-corrected p below which a pair helps

/// Pairs of `model`, VIF-filtered on `data` when given (its columns must be the model's
/// features; analyze_tree_dynamics checks that).
InteractionReport suggest_interactions(const TreeEnsemble& model, const TreeData* data,
                                       const TreeThresholds& thresholds = {});

/// Tests each kept pair of `report` on labelled `data`: K-fold cross-validated (deterministic
/// folds) held-out loss of an additive model of every feature's quantile-binned main effects
/// (ridge; logistic or least squares) against the same plus the pair's interaction (the
/// product of the two standardised features), each pair on top of the pairs suggested before it
/// (rank order). Sets cv_gain and the Bonferroni-corrected p_value of
/// each pair; pairs without evidence (gain <= 0 or p >= kInteractionAlpha) move to
/// no_evidence. At most 5,000 rows (every k-th). Does nothing without labels.
void test_interactions(InteractionReport& report, const TreeData& data, InteractionModel model);

/// Pearson correlation of columns a and b of `data` over rows where both are finite (NaN when
/// fewer than 2 such rows or a column is constant there).
double column_correlation(const TreeData& data, int32_t a, int32_t b);

}  // namespace gradscope
