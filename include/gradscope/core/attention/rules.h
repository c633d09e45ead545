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
//
// Each rule is one row of kHeadRules (rules.cpp): the flag, how a sample reads against it,
// the value its evidence reports and which way is worse, its threshold and its words. One loop
// keeps every rule's run per head (HeadTrack::add) and one loop judges them (judge_attention):
// a new per-head rule is a row there, its flag's row (vocabulary/flag_info.h) and a test.
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

/// One rule's run of sampled steps past it, and the head's worst sample for it.
struct HeadRun {
  int64_t length = 0, start = -1;  ///< the current run of samples past the rule
  int64_t since = -1;              ///< first step of the first run of attention_persist_steps
  double worst = std::numeric_limits<double>::quiet_NaN();  ///< the rule's value at its worst sample
  int64_t worst_step = -1;
  HeadStats at_worst;  ///< that sample, for the evidence's words
};

/// What the rules keep of one head across its samples (steps increasing): what every rule
/// compares with (the head's first samples), and one HeadRun per rule (kHeadRules, rules.cpp).
struct HeadTrack {
  static constexpr int kEarlySamples = 3;
  int64_t samples = 0;
  double first_max_logit = 0;  ///< the head's first sample: the level growth is measured from
  double early_fraction = 0;   ///< highest entropy fraction over the first kEarlySamples
  std::vector<HeadRun> runs;   ///< one per rule, in the rules' order

  void add(int64_t step, const HeadStats& s, const Thresholds& t);
  /// The rule raising `flag`: its run (nullptr for a flag no per-head rule raises).
  const HeadRun* run(Flag flag) const;
  /// The first step of `flag`'s first qualifying run; -1: the head does not have it.
  int64_t since(Flag flag) const;
};

/// Whether a per-head rule (kHeadRules) raises `flag`: what the attention charts show.
bool raised_per_head(Flag flag);

/// The attention evidence of one node from its heads' tracks: at most one Evidence per flag,
/// naming the heads that have it and the worst one, with the step the first of them began.
std::vector<Evidence> judge_attention(const std::vector<HeadTrack>& heads, const Thresholds& t);

}  // namespace gradscope
