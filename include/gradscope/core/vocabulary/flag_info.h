// The module-audit flags, each declared once: its name, how it ranks, the threshold its rule
// compares against, how its margin becomes a confidence, and what to tell the user. Every
// layer that shows a flag (the terminal table, the JSON, the HTML, TensorBoard, Python, the
// findings) reads this table; a new flag is a row here, its rule (audit/step_judgement.cpp per
// step, audit/judge.cpp over the run) and a test (docs/architecture.md, "Adding a flag, a
// threshold or a finding kind").
//
//   const gradscope::FlagInfo& info = gradscope::flag_info(gradscope::Flag::kDead);
//   info.name;       // "DEAD"
//   info.threshold;  // "dead_frac": the Thresholds field the rule compares against
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iterator>

#include "gradscope/core/enum_table.h"

namespace gradscope {

/// Verdicts about a node. HEALTHY is set exactly when no other flag is. The order is the
/// order of kFlags below (checked at compile time) and of every list of flags.
enum class Flag : uint8_t {
  kHealthy,
  kVanishing,
  kExploding,
  kNaN,
  kInf,
  kDead,
  kSaturated,
  kNoData,
  kFrozen,           ///< has parameters, none of which ever received a gradient
  kStagnant,         ///< update ratio below update_ratio_lo for stagnant_steps audited steps
  kDeadChannels,     ///< some channels dead while the node as a whole is not
  kIgnoredChannels,  ///< live channels whose output gradient is ~0
  kLeakage,          ///< two branches or channel groups carry the same information
  kAttentionLogitGrowth,      ///< a head's largest pre-softmax logit grew past attention_logit_hi
  kAttentionEntropyCollapse,  ///< a head's attention fell onto one key (core/attention/rules.h)
  kGradientSpike,             ///< a burst of the node's gradient against its own recent band
  kDepthGradientImbalance,    ///< first block of a stack far below its last, the loss stalled
  kEnd,  ///< not a flag: the count (a flag added before it without a row in kFlags does not compile)
};

/// What a flag means for the model, what to try first, and how to tell it worked.
struct FlagGuidance {
  const char* implies;
  const char* action;
  const char* expected_effect;
};

/// How far past its threshold a flag's value is, read as a confidence (findings/findings.h).
enum class FlagMargin : uint8_t {
  kObserved,      ///< a count of what was seen (NaN, Inf elements): a fact, no threshold
  kNothingSeen,   ///< nothing of a kind was recorded (FROZEN, NO_DATA): a fact, no threshold
  kOrdersBelow,   ///< value < threshold; orders of magnitude below it (VANISHING, STAGNANT)
  kOrdersAbove,   ///< value > threshold; orders of magnitude above it (EXPLODING)
  kFraction,      ///< a fraction > threshold; share of the range left up to 1 (DEAD, ...)
  kChannelShare,  ///< channels counted > channel_frac x channels (DEAD_CHANNELS, ...)
};

/// A set of flags as bits, for the table below (FlagSet, flags.h, is the run-time set).
constexpr uint32_t flag_bits(std::initializer_list<Flag> flags) {
  uint32_t bits = 0;
  for (Flag f : flags) bits |= uint32_t{1} << static_cast<int>(f);
  return bits;
}

struct FlagInfo {
  Flag flag;
  const char* name;       ///< upper case, as printed
  const char* threshold;  ///< the Thresholds field the value is compared with ("": none)
  FlagMargin margin;
  FlagGuidance guidance;  ///< empty strings for HEALTHY
  /// Flags that say more about the same node: where one of them is raised, this one is not
  /// (NodeReport::raise). DEAD_CHANNELS yields to DEAD: a dead node has dead channels.
  uint32_t yields_to = 0;
};

/// The comparison a flag's rule makes: "<", ">" or "" (a fact, not a comparison).
constexpr const char* flag_comparison(FlagMargin m) {
  switch (m) {
    case FlagMargin::kOrdersBelow: return "<";
    case FlagMargin::kOrdersAbove:
    case FlagMargin::kFraction:
    case FlagMargin::kChannelShare: return ">";
    default: return "";
  }
}

inline constexpr FlagInfo kFlags[] = {
    {Flag::kHealthy, "HEALTHY", "", FlagMargin::kObserved, {"", "", ""}},
    {Flag::kVanishing, "VANISHING", "grad_lo", FlagMargin::kOrdersBelow,
     {"The node's gradient is too small for the optimizer to move its parameters: it, and the "
      "nodes in front of it, barely learn.",
      "Gradients too small to train it: check the initialisation scale, add normalisation "
      "or a residual path around the nodes in front of it, or use a non-saturating activation.",
      "The node's mean gradient L2 rises above grad_lo and the flag clears on the next run."}},
    {Flag::kExploding, "EXPLODING", "grad_hi", FlagMargin::kOrdersAbove,
     {"The node's gradient is so large that each step overshoots: the loss jumps or diverges.",
      "Gradients too large: clip the gradient norm, lower the learning rate, and check the "
      "scale of its inputs.",
      "The node's mean gradient L2 falls below grad_hi and the loss stops jumping."}},
    {Flag::kNaN, "NAN", "", FlagMargin::kObserved,
     {"A NaN reached the node's values; every value computed from it is NaN, so training "
      "stopped learning from that step on.",
      "Start at the NaN origin: look for log or sqrt of non-positive values, division by "
      "zero or overflowing exp there; lower the learning rate or clip gradients.",
      "No NaN element is recorded at any site of the node."}},
    {Flag::kInf, "INF", "", FlagMargin::kObserved,
     {"Values overflowed to infinity at the node; the next operation on them gives NaN or "
      "saturates.",
      "Values overflowed: check the input scale and any exp or division, clip gradients, "
      "or compute that part in float32.",
      "No Inf element is recorded at any site of the node."}},
    {Flag::kDead, "DEAD", "dead_frac", FlagMargin::kFraction,
     {"Almost all of the node's outputs are zero, so almost no gradient passes through it "
      "(dying ReLU): the nodes in front of it stop learning too.",
      "Its outputs are almost all zero (dying ReLU): lower the learning rate, use "
      "LeakyReLU or GELU, or re-initialise its biases to small positive values.",
      "The activation zero fraction stays below dead_frac at every step."}},
    {Flag::kSaturated, "SATURATED", "saturation_frac", FlagMargin::kFraction,
     {"Most inputs of the node's squashing function (tanh, sigmoid) sit where it is flat, so "
      "their gradient is near zero.",
      "Inputs of its squashing function beyond the saturation threshold: normalise its inputs, "
      "add a normalisation layer, or lower the initialisation scale.",
      "The saturated fraction of its squashing function's inputs stays below saturation_frac "
      "at every step."}},
    {Flag::kNoData, "NO_DATA", "", FlagMargin::kNothingSeen,
     {"The audit saw nothing of this node: whatever is wrong with it cannot be seen.",
      "Nothing was recorded: check that it runs in forward and that the audit covers it.",
      "Activations or gradients of the node are recorded."}},
    {Flag::kFrozen, "FROZEN", "", FlagMargin::kNothingSeen,
     {"The node's parameters never change: it computes with its initial weights.",
      "Its parameters never received a gradient: if not intended, check requires_grad and "
      "that its output reaches the loss.",
      "Parameter gradients of the node are recorded (or the node is frozen on purpose)."}},
    {Flag::kStagnant, "STAGNANT", "update_ratio_lo", FlagMargin::kOrdersBelow,
     {"The optimizer's steps are tiny next to the parameters: the node has stopped learning "
      "although gradients reach it.",
      "Its parameters barely move: raise its learning rate, or check the optimizer's "
      "parameter groups and weight decay.",
      "The update ratio stays above update_ratio_lo."}},
    {Flag::kDeadChannels, "DEAD_CHANNELS", "channel_frac", FlagMargin::kChannelShare,
     {"Part of the node's channels output zero at nearly every step: capacity that is paid for "
      "but unused.",
      "Some channels never activate: re-initialise or prune them, or use a leaky "
      "activation.",
      "At most channel_frac of the channels have an activation zero fraction above dead_frac."},
     flag_bits({Flag::kDead})},
    {Flag::kIgnoredChannels, "IGNORED_CHANNELS", "channel_frac", FlagMargin::kChannelShare,
     {"Live channels whose output the rest of the model does not use: their gradient is far "
      "below the other channels'.",
      "Live channels the next nodes ignore: candidates for pruning, or check the node that "
      "consumes them.",
      "After pruning, the accuracy is unchanged; or the channels' gradients reach the median."}},
    {Flag::kLeakage, "LEAKAGE", "leakage_cka", FlagMargin::kFraction,
     {"Two branches or channel groups carry the same information: one of them is redundant, "
      "or information leaks between them.",
      "Two branches carry the same information: drop or shrink one, or regularise them "
      "towards diversity.",
      "Their mean linear CKA falls below leakage_cka."}},
    {Flag::kAttentionLogitGrowth, "ATTENTION_LOGIT_GROWTH", "attention_logit_hi", FlagMargin::kOrdersAbove,
     {"A head's pre-softmax attention logits grew far past their starting size: the softmax "
      "turns one-hot and training becomes unstable (Wortsman et al. 2023; Dehghani et al. 2023).",
      "Normalise queries and keys (qk-LayerNorm), lower the peak learning rate or lengthen the "
      "warm-up, or soft-cap the logits (c * tanh(logit / c)).",
      "The head's largest logit stays below attention_logit_hi."}},
    {Flag::kAttentionEntropyCollapse, "ATTENTION_ENTROPY_COLLAPSE", "attention_entropy_floor",
     FlagMargin::kOrdersBelow,
     {"A head's attention fell onto one key for almost every query: its entropy is far below its "
      "own early level (Zhai et al. 2023), so the head passes one token and its gradient vanishes.",
      "Normalise queries and keys (qk-LayerNorm), lower the peak learning rate or lengthen the "
      "warm-up, or soft-cap the logits; sigma-reparametrising the attention weights also helps.",
      "The head's mean entropy (as a fraction of log(keys seen)) stays above "
      "attention_entropy_floor."}},
    {Flag::kGradientSpike, "GRADIENT_SPIKE", "grad_spike_ratio", FlagMargin::kOrdersAbove,
     {"The node's gradient burst far above its own recent level: the update it drives jumps the "
      "weights, and the loss spikes or diverges a step later (the case a mean over the run misses).",
      "Clip the gradient norm (a value from the measured norms before clipping), lower the learning "
      "rate or lengthen the warm-up; if one batch caused it, skip or inspect that batch.",
      "The node's gradient stays below grad_spike_ratio x its recent largest."}},
    {Flag::kDepthGradientImbalance, "DEPTH_GRADIENT_IMBALANCE", "depth_grad_ratio", FlagMargin::kOrdersAbove,
     {"The gradient reaching the stack's first block stays orders of magnitude below its last "
      "block's while the loss does not fall: the deep stack does not train (a post-LN transformer "
      "without learning-rate warm-up does this: Xiong et al. 2020).",
      "In a post-LN transformer, warm the learning rate up over the first steps or normalise each "
      "block's input instead of its output (pre-LN); in other stacks, add normalisation or residual "
      "paths between the blocks; or lower the learning rate or the initialisation scale.",
      "The loss leaves its early level and the first block's gradient stays within "
      "depth_grad_ratio of the last block's."},
     // A first block already VANISHING, DEAD, non-finite or STAGNANT (its parameters do not
     // move: the learning rate, not the depth) is named by that flag, which says more.
     flag_bits({Flag::kVanishing, Flag::kDead, Flag::kNaN, Flag::kInf, Flag::kStagnant})},
};

/// The flags from least to most severe (flag_severity, flags.h, is the place here): a new flag is one
/// entry where it ranks. DEAD ranks above VANISHING because zero outputs cut the backward path:
/// the nodes before a dead one vanish as a consequence. The attention logit growth is the
/// cause, the collapse its effect (large logits make the softmax one-hot): both outrank
/// EXPLODING, which they bring on. A burst of the gradient is where a blow-up starts: the NaN,
/// the saturation and the stagnation that follow are its effects, so it ranks above them all.
/// A stack that does not train heads its node's flags: the stall outranks any single symptom.
inline constexpr Flag kSeverityOrder[] = {
    Flag::kHealthy,         Flag::kNoData,    Flag::kFrozen,    Flag::kLeakage,
    Flag::kIgnoredChannels, Flag::kSaturated, Flag::kDeadChannels, Flag::kStagnant,
    Flag::kVanishing,       Flag::kDead,      Flag::kExploding, Flag::kAttentionEntropyCollapse,
    Flag::kAttentionLogitGrowth, Flag::kInf, Flag::kNaN,       Flag::kGradientSpike,
    Flag::kDepthGradientImbalance,
};

inline constexpr int kFlagCount = static_cast<int>(Flag::kEnd);

namespace flag_table_checks {
// A row for every flag, row i describing Flag(i), every flag ranked once, and a flag with a
// comparison naming its threshold: a flag added without its row, out of order or half-filled
// does not compile.
constexpr bool every_flag_ranked_once() {
  for (int f = 0; f < kFlagCount; ++f) {
    int seen = 0;
    for (Flag r : kSeverityOrder) seen += static_cast<int>(r) == f;
    if (seen != 1) return false;
  }
  return true;
}
constexpr bool compared_flags_name_a_threshold() {
  for (const FlagInfo& f : kFlags)
    if (flag_comparison(f.margin)[0] != '\0' && f.threshold[0] == '\0') return false;
  return true;
}
static_assert(std::size(kFlags) == kFlagCount, "kFlags: every flag of the enum has one row");
static_assert(rows_in_enum_order(kFlags, &FlagInfo::flag), "kFlags: row i must describe Flag(i)");
static_assert(std::size(kSeverityOrder) == kFlagCount && every_flag_ranked_once(),
              "kSeverityOrder: every flag ranked once");
static_assert(compared_flags_name_a_threshold(), "kFlags: a compared flag names no threshold");
static_assert(kFlagCount <= 32, "FlagSet holds at most 32 flags");
}  // namespace flag_table_checks

/// The row of `flag` (the HEALTHY row for a value outside the enum).
constexpr const FlagInfo& flag_info(Flag flag) {
  const int i = static_cast<int>(flag);
  return kFlags[i >= 0 && i < kFlagCount ? i : 0];
}

}  // namespace gradscope
