// The rule that maps a run's dynamics to a compression recipe (docs/compression.md): a greedy
// rate-distortion allocation. Each move (one node one precision lower, or one more output unit
// pruned) has a predicted loss increase from a second-order estimate with the empirical
// Fisher measured during training, and a byte saving; the cheapest loss per byte goes first.
//
//   std::vector<NodeProfile> nodes = ...;          // torch/compress_profile.h or units.json
//   gradscope::compress::add_run_dynamics(nodes, records);   // gradients, update ratios
//   Recipe r = gradscope::compress::make_recipe(nodes, Budget::bytes(8000));
//   for (const auto& d : r.nodes) std::cout << d.node << ": " << d.action << "\n";
#pragma once

#include <vector>

#include "gradscope/core/compress/recipe.h"
#include "gradscope/core/vocabulary/record.h"

namespace gradscope::compress {

/// What the recipe must meet: a size, or a bound on the predicted loss increase (nats).
struct Budget {
  int64_t max_bytes = 0;           ///< > 0: the recipe takes at most this many bytes
  double max_loss = NodeProfile::kNone;  ///< finite: smallest recipe predicted within it
  static Budget bytes(int64_t n) { return Budget{n, NodeProfile::kNone}; }
  static Budget loss(double x) { return Budget{0, x}; }
};

/// Which signals the rule uses; the ablations switch one off (docs/validation.md).
struct RuleOptions {
  /// Per-node gradient energy (empirical Fisher) weighs quantisation noise; off: every node 1.
  bool use_fisher = true;
  /// Per-unit activation x output-gradient saliency prices pruning; off: the unit's weights'
  /// energy times the node's Fisher (what zeroing them costs to second order).
  bool use_unit_saliency = true;
  /// Units whose output was zero in at least this fraction of sampled activations are always
  /// pruned (with unit saliency on) and cost nothing.
  double dead_frac = 0.99;
  /// Fewest units a prunable node keeps.
  int64_t min_units = 1;
};

/// The recipe for `profiles` within `budget`. Throws Error for invalid profiles, a budget with
/// neither or both bounds, or a size that cannot be met (naming the smallest reachable size).
Recipe make_recipe(const std::vector<NodeProfile>& profiles, const Budget& budget, const RuleOptions& options = {});

/// The smallest size make_recipe can reach: every node at its smallest precision (INT2 unless
/// its scales outweigh the bits saved), every prunable node down to min_units units.
int64_t smallest_bytes(const std::vector<NodeProfile>& profiles, const RuleOptions& options = {});

/// Predicted loss increase (nats) of one node's decision under the rule's estimate.
double predicted_loss(const NodeProfile& profile, const NodeDecision& decision, const RuleOptions& options = {});

/// Fills grad_sq, param_elements, update_ratio and steps of `profiles` from run records
/// (param_grad, param and update sites; records of other nodes are ignored).
class RunDynamics {
 public:
  void add(const Record& record);
  void fill(std::vector<NodeProfile>& profiles) const;

 private:
  struct Node {
    std::string name;
    double grad_sq = 0, update_l2 = 0, param_l2 = 0;
    int64_t grad_steps = 0, update_steps = 0, elements = 0;
  };
  Node& node(const std::string& name);
  std::vector<Node> nodes_;
};

/// Convenience: RunDynamics over `records`, then fill.
void add_run_dynamics(std::vector<NodeProfile>& profiles, const std::vector<Record>& records);

}  // namespace gradscope::compress
