// The steps of analyze_tree_dynamics (trees/dynamics.h), one file each: the model's own
// per-round numbers, the pass over the rows, the windows and feature totals, the rules.
#pragma once

#include <utility>
#include <vector>

#include "gradscope/core/trees/dynamics.h"

namespace gradscope::tree_internal {

/// Leaves, depth, leaf values, gains, covers and split features of every round (no data).
/// Sets report.per_round (one per round), has_gain and has_cover.
void measure_model(const TreeEnsemble& model, TreeDynamicsReport& report);

/// The value `tree` adds for a row that ends in `leaf` (leaf_of): tree_output without walking
/// the tree again.
double leaf_output(const TreeEnsemble& model, const Tree& tree, int32_t leaf);

/// Round outputs, contributions and velocity over `reference`, the loss after every round on
/// the labelled sets, with one running sum per row and output, and the best validation round
/// with the paired z of the rise after it.
void measure_data(const TreeEnsemble& model, const TreeDynamicsInput& input,
                  TreeDynamicsReport& report);

/// 1-Wasserstein distance between two distributions on the line, each given as (value,
/// weight) atoms sorted by value with weights summing to 1: the area between their CDFs.
double wasserstein1(const std::vector<std::pair<double, double>>& a,
                    const std::vector<std::pair<double, double>>& b);

/// The windows and feature totals of report.per_round.
void measure_windows(TreeDynamicsReport& report);

/// STAGNANT, OVERFITTING, EXPLODING and CONCENTRATED with their evidence, and what could not
/// be judged and why.
void judge_trees(TreeDynamicsReport& report);

}  // namespace gradscope::tree_internal
