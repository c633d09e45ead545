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
// trees splitting one signal twice, so the pair is dropped (and listed as dropped).
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
};

/// The suggestions and what the filter removed.
struct InteractionReport {
  bool by_gain = false;               ///< ranked by gain (false: by count, the file has no gains)
  bool filtered = false;              ///< VIF computed (data given)
  int64_t pairs = 0;                  ///< distinct pairs seen
  std::vector<InteractionPair> kept;  ///< best first, at most max_interactions
  std::vector<InteractionPair> dropped;  ///< collinear pairs that ranked above the last kept one
};

/// Pairs of `model`, VIF-filtered on `data` when given (its columns must be the model's
/// features; analyze_tree_dynamics checks that).
InteractionReport suggest_interactions(const TreeEnsemble& model, const TreeData* data,
                                       const TreeThresholds& thresholds = {});

/// Pearson correlation of columns a and b of `data` over rows where both are finite (NaN when
/// fewer than 2 such rows or a column is constant there).
double column_correlation(const TreeData& data, int32_t a, int32_t b);

}  // namespace gradscope
