// Record: one (step, node, site) summary, the contract between measuring and judging.
//
//   gradscope::Record r{step, "encoder/fc1", gradscope::Site::kParamGrad, gradscope::compute(g)};
//   builder.add(r);                       // see report.h
#pragma once

#include <cstdint>
#include <string>

#include "gradscope/core/stats/stats.h"

namespace gradscope {

/// Where in training a tensor was measured.
enum class Site : uint8_t {
  kActivation,     ///< a node's forward output
  kOutputGrad,     ///< gradient flowing into a node's output from the next node
  kParamGrad,      ///< accumulated gradients of the node's parameters
  kParam,          ///< the parameters themselves
  kUpdate,         ///< actual parameter change across the optimizer step
  kEmbeddingRows,  ///< touched rows of an embedding table
  kFrozenParam,    ///< parameters that do not require gradients
  kPreActivation,  ///< output of a node's own module before the parameter-free ones after it
  // Boosted trees (trees/dynamics.h), one step per boosting round. The module rules judge none
  // of them (a tree run's verdict is its trees.json); they count their NaN and Inf.
  kRoundOutput,    ///< a round's outputs over the reference rows
  kLeafValue,      ///< the leaf values of a round's trees
  kSplitGain,      ///< the gains of a round's splits on one feature
  kRowLoss,        ///< per-row loss of the model after a round
  /// The pre-softmax logits of a node's attention, per head (core/attention): the attention
  /// rules' evidence names it; its summaries are AttentionRecords, never Records.
  kAttentionLogits,
};
inline constexpr int kSiteCount = 13;

/// True for the boosted-tree sites (kRoundOutput .. kRowLoss).
constexpr bool is_tree_site(Site site) {
  return site == Site::kRoundOutput || site == Site::kLeafValue || site == Site::kSplitGain ||
         site == Site::kRowLoss;
}

/// The sites that measure a node's gradient, in the order the rules, the timeline and the
/// series prefer them: the parameter gradient; the touched rows of an embedding table (its
/// gradient is zero outside them, so their L2 is the parameter gradient's); the output
/// gradient of a node without parameters.
inline constexpr Site kGradientSites[] = {Site::kParamGrad, Site::kEmbeddingRows, Site::kOutputGrad};
inline constexpr int kGradientSiteCount = 3;

/// Index of `site` in kGradientSites, -1 when it does not measure a gradient.
constexpr int gradient_site_rank(Site site) {
  for (int i = 0; i < kGradientSiteCount; ++i)
    if (kGradientSites[i] == site) return i;
  return -1;
}

/// snake_case name of a site ("param_grad", ...).
const char* site_name(Site site);

/// One measured summary. Several records with the same (step, node, site) merge into one.
struct Record {
  int64_t step = 0;
  std::string node;  ///< hierarchical id, e.g. "encoder/backbone.0.attn"
  Site site = Site::kParamGrad;
  Stats stats;
};

}  // namespace gradscope
