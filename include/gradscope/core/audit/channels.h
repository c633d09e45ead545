// Channel-level records: per-channel summaries of one node, and measured similarity between
// two branches or channel groups. Adapters measure; rules (rules.h) judge.
//
//   gradscope::ChannelRecord c{step, "conv2", per_channel_activation, per_channel_grad, rank};
//   builder.add(c);                                          // DEAD_CHANNELS, IGNORED_CHANNELS
//   builder.add(gradscope::SimilarityRecord{step, "branch_a", "branch_b", 0.98});  // LEAKAGE
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gradscope/core/stats/stats.h"

namespace gradscope {

/// Per-channel summaries of a node's activation and output gradient at one sampled step.
struct ChannelRecord {
  int64_t step = 0;
  std::string node;
  std::vector<Stats> activation;   ///< one summary per channel
  std::vector<Stats> output_grad;  ///< empty when the gradient was not seen
  /// exp of the entropy of the normalised singular values of the [samples x channels]
  /// activation matrix (Roy & Vetterli 2007); NaN when not measured.
  double effective_rank = std::numeric_limits<double>::quiet_NaN();
};

/// Linear CKA between two activations measured at one step (1 = same information).
struct SimilarityRecord {
  int64_t step = 0;
  std::string node;   ///< the node the finding belongs to
  std::string other;  ///< the other branch, or channel group, e.g. "conv2[16:32]"
  double cka = 0;
};

}  // namespace gradscope
