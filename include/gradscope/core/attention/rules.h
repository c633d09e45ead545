// The attention rules: per head, over the sampled steps of a node, in O(1) memory per head.
//
//   gradscope::AttentionRecord r{step, "blocks.0.attn", attention_head_stats(p, shape)};
//   builder.add(r);   // ReportBuilder (audit/rules.h) keeps a HeadTrack per head
//
// ATTENTION_LOGIT_GROWTH      the head's largest pre-softmax logit > attention_logit_hi at
//                             attention_persist_steps sampled steps in a row, its first sample
//                             having been at or below it (it grew there; a model built with
//                             large logits from the start is not flagged).
// ATTENTION_ENTROPY_COLLAPSE  the head's mean entropy fraction (entropy / log(keys seen)) below
//                             attention_entropy_floor and below attention_entropy_drop x its
//                             highest level over its first kEarlySamples samples, at
//                             attention_persist_steps sampled steps in a row.
// "Since" is the first step of the first qualifying run. A sample whose rows were all
// non-finite (NaN or +Inf logits) says nothing of the head and is skipped.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gradscope/core/attention/head_stats.h"
#include "gradscope/core/vocabulary/flags.h"
#include "gradscope/core/vocabulary/thresholds.h"

namespace gradscope {

/// One node's attention at one sampled step: a summary per head.
struct AttentionRecord {
  int64_t step = 0;
  std::string node;
  std::vector<HeadStats> heads;
};

/// What the rules keep of one head across its samples (steps increasing).
struct HeadTrack {
  static constexpr int kEarlySamples = 3;
  int64_t samples = 0;
  double first_max_logit = 0;  ///< the head's first sample: the level growth is measured from
  double early_fraction = 0;   ///< highest entropy fraction over the first kEarlySamples

  int64_t logit_run = 0, logit_run_start = -1, first_growth = -1;
  double peak_logit = -std::numeric_limits<double>::infinity();
  int64_t peak_step = -1;

  int64_t collapse_run = 0, collapse_run_start = -1, first_collapse = -1;
  double lowest_fraction = std::numeric_limits<double>::infinity();
  double top_fraction_at_lowest = 0;  ///< share of one-key queries at the lowest sample
  int64_t lowest_step = -1;

  void add(int64_t step, const HeadStats& s, const Thresholds& t);
};

/// The attention evidence of one node from its heads' tracks: at most one Evidence per flag,
/// naming the heads that have it and the worst one, with the step the first of them began.
std::vector<Evidence> judge_attention(const std::vector<HeadTrack>& heads, const Thresholds& t);

}  // namespace gradscope
