// DEPTH_GRADIENT_IMBALANCE: a stack of numbered blocks (blocks.0 ... blocks.5, layers/0 ...)
// whose first block's gradient stays orders of magnitude below its last block's while the loss
// does not fall. A deep post-LN transformer without warm-up does this (Xiong et al. 2020, "On
// Layer Normalization in the Transformer Architecture"): on examples/transformer_lm.py's
// postln_stuck the ratio reaches 229-1612 over 20 audited steps and the loss stays on its
// plateau; with warm-up, pre-LN, or the repository's healthy runs it stays at or below 45.
//
//   std::optional<gradscope::DepthImbalance> d =
//       gradscope::find_depth_imbalance(histories, series, thresholds);
//   d->first_nodes;  // the nodes of the stack's first block: where the flag goes
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/vocabulary/thresholds.h"
#include "gradscope/core/series/rules.h"

namespace gradscope {

/// Audited steps of a node's gradient L2 kept for the depth rule: the failure it names shows
/// in the first steps of training (a post-LN stack fails before warm-up would have ended).
inline constexpr std::size_t kDepthSteps = 1000;

/// At the first audited step the last/first ratio must be below depth_grad_ratio / this: the
/// imbalance the rule names grows in training (post-LN GPT: 0.8-1.9 at the first step).
inline constexpr double kDepthStartFactor = 10;

/// A node's gradient L2 per audited step (increasing steps), the first kDepthSteps.
struct NodeGradients {
  std::string node;
  const std::vector<std::pair<int64_t, double>>* grad = nullptr;
};

struct DepthImbalance {
  std::string stack;                    ///< the container: "blocks" of blocks.0, blocks.1, ...
  int64_t blocks = 0;                   ///< numbered blocks with gradients
  std::string first_block, last_block;  ///< "blocks.0", "blocks.5"
  std::vector<std::string> first_nodes; ///< the audited nodes that make up the first block
  int64_t since = -1;                   ///< first step of the first run of depth_window steps above
  double ratio = 0;  ///< largest, over runs of depth_window steps, of the run's smallest last/first
  double early_loss = 0, late_loss = 0; ///< SeriesReport::early_loss_level, late_loss_mean
};

/// Whether node `inner` lies inside node `outer` ("blocks.0.attn/qkv" inside "blocks.0.attn" or
/// "blocks.0").
bool node_inside(const std::string& inner, const std::string& outer);

/// The first stack (in the order its first node appears) that has the imbalance: at least three
/// numbered blocks, each block's gradient L2 the root of the sum of squares of its outermost
/// audited nodes at a step where all of them have one; the ratio at the first audited step
/// below depth_grad_ratio / kDepthStartFactor; the loss known and stalled
/// (SeriesReport::loss_stalled(plateau_fall)) and not diverged. nullopt when none.
std::optional<DepthImbalance> find_depth_imbalance(const std::vector<NodeGradients>& nodes, const SeriesReport& series,
                                                   const Thresholds& t);

}  // namespace gradscope
