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

/// The confidence that the validation rise after report.best_valid_rounds is real: 1 - p of a
/// paired sign-flip permutation test whose statistic is the largest paired t of the whole
/// model against every prefix the rule could name, so the choice of the best prefix is paid
/// for (rise_confidence.cpp; docs/trees.md). NaN when the best is the whole model.
double rise_confidence(const TreeEnsemble& model, const TreeData& validation,
                       const TreeDynamicsReport& report);

/// 1-Wasserstein distance between two distributions on the line, each given as (value,
/// weight) atoms sorted by value with weights summing to 1: the area between their CDFs.
double wasserstein1(const std::vector<std::pair<double, double>>& a,
                    const std::vector<std::pair<double, double>>& b);

/// The windows the rules judge on, whatever window the views use: max(5, ceil(rounds / 20))
/// rounds (at most the rounds), so that --window, a way to look, never changes a verdict.
int32_t rule_window(int32_t rounds);
/// report.per_round in windows of `size` rounds (as equal as integers allow).
std::vector<WindowDynamics> windows_of(const TreeDynamicsReport& report, int32_t size);
/// The views' windows (thresholds.window, else rule_window) and feature totals of
/// report.per_round.
void measure_windows(TreeDynamicsReport& report);

/// STAGNANT, OVERFITTING, EXPLODING and CONCENTRATED with their evidence, and what could not
/// be judged and why.
void judge_trees(TreeDynamicsReport& report);

}  // namespace gradscope::tree_internal
