// The guidance texts of every module flag, written once: the JSON findings, the HTML report's
// "What to do" and flag_advice all read them from here.
#include "gradscope/core/findings/findings.h"

#include <string>

namespace gradscope {
namespace {

const FlagGuidance kGuidance[kFlagCount] = {
    // kHealthy
    {"", "", ""},
    // kVanishing
    {"The node's gradient is too small for the optimizer to move its parameters: it, and the "
     "nodes in front of it, barely learn.",
     "Gradients too small to train it: check the initialisation scale, add normalisation "
     "or a residual path around the nodes in front of it, or use a non-saturating activation.",
     "The node's mean gradient L2 rises above grad_lo and the flag clears on the next run."},
    // kExploding
    {"The node's gradient is so large that each step overshoots: the loss jumps or diverges.",
     "Gradients too large: clip the gradient norm, lower the learning rate, and check the "
     "scale of its inputs.",
     "The node's mean gradient L2 falls below grad_hi and the loss stops jumping."},
    // kNaN
    {"A NaN reached the node's values; every value computed from it is NaN, so training "
     "stopped learning from that step on.",
     "Start at the NaN origin: look for log or sqrt of non-positive values, division by "
     "zero or overflowing exp there; lower the learning rate or clip gradients.",
     "No NaN element is recorded at any site of the node."},
    // kInf
    {"Values overflowed to infinity at the node; the next operation on them gives NaN or "
     "saturates.",
     "Values overflowed: check the input scale and any exp or division, clip gradients, "
     "or compute that part in float32.",
     "No Inf element is recorded at any site of the node."},
    // kDead
    {"Almost all of the node's outputs are zero, so almost no gradient passes through it "
     "(dying ReLU): the nodes in front of it stop learning too.",
     "Its outputs are almost all zero (dying ReLU): lower the learning rate, use "
     "LeakyReLU or GELU, or re-initialise its biases to small positive values.",
     "The activation zero fraction stays below dead_frac at every step."},
    // kSaturated
    {"Most of the node's activations sit where the nonlinearity is flat, so their gradient is "
     "near zero.",
     "Activations beyond the saturation threshold: normalise its inputs, add a "
     "normalisation layer, or lower the initialisation scale.",
     "The saturated fraction stays below saturation_frac at every step."},
    // kNoData
    {"The audit saw nothing of this node: whatever is wrong with it cannot be seen.",
     "Nothing was recorded: check that it runs in forward and that the audit covers it.",
     "Activations or gradients of the node are recorded."},
    // kFrozen
    {"The node's parameters never change: it computes with its initial weights.",
     "Its parameters never received a gradient: if not intended, check requires_grad and "
     "that its output reaches the loss.",
     "Parameter gradients of the node are recorded (or the node is frozen on purpose)."},
    // kStagnant
    {"The optimizer's steps are tiny next to the parameters: the node has stopped learning "
     "although gradients reach it.",
     "Its parameters barely move: raise its learning rate, or check the optimizer's "
     "parameter groups and weight decay.",
     "The update ratio stays above update_ratio_lo."},
    // kDeadChannels
    {"Part of the node's channels output zero at nearly every step: capacity that is paid for "
     "but unused.",
     "Some channels never activate: re-initialise or prune them, or use a leaky "
     "activation.",
     "At most channel_frac of the channels have an activation zero fraction above dead_frac."},
    // kIgnoredChannels
    {"Live channels whose output the rest of the model does not use: their gradient is far "
     "below the other channels'.",
     "Live channels the next nodes ignore: candidates for pruning, or check the node that "
     "consumes them.",
     "After pruning, the accuracy is unchanged; or the channels' gradients reach the median."},
    // kLeakage
    {"Two branches or channel groups carry the same information: one of them is redundant, "
     "or information leaks between them.",
     "Two branches carry the same information: drop or shrink one, or regularise them "
     "towards diversity.",
     "Their mean linear CKA falls below leakage_cka."},
};

}  // namespace

const FlagGuidance& nonfinite_guidance(Flag flag, const std::string& phase) {
  // Where the NaN or Inf was born decides what helps: gradient clipping cannot reach a value
  // that a forward op produced from finite inputs.
  static const FlagGuidance kForward{
      "NaN or Inf values were born in the forward pass, at the origin node: an operation there "
      "produced them from finite inputs, and every value computed from them is non-finite.",
      "Look at the forward of the origin node: log or sqrt of non-positive values, division by "
      "zero, exp or pow that overflows, inputs outside the range the op expects. Guard the op "
      "(clamp its input, add an epsilon) or compute it in float32; clipping gradients or a "
      "lower learning rate does not reach a value born in the forward pass.",
      "No NaN or Inf element is recorded at the origin node's activation."};
  static const FlagGuidance kBackward{
      "NaN or Inf values were born in backward: the forward values were finite, a derivative "
      "was not (sqrt or pow at 0, acos or asin at +-1, the norm of a zero vector, a custom "
      "backward), or the gradients overflowed.",
      "Check the ops with unbounded derivatives in the origin node's forward and any custom "
      "autograd function, and add an epsilon inside them; if the gradients are finite but "
      "huge, clip the gradient norm.",
      "No NaN or Inf element is recorded in the origin node's gradients."};
  static const FlagGuidance kOptimizer{
      "NaN or Inf values were born in the optimizer step: the gradients were finite, the "
      "update made the parameters non-finite (a learning rate or update too large, or a "
      "division in the optimizer such as Adam's with an eps too small for the precision).",
      "Lower the learning rate or add warm-up, clip the gradient norm, and check the "
      "optimizer's eps (1e-8 or more; larger in float16).",
      "No NaN or Inf element is recorded in the parameters or their updates."};
  if (flag == Flag::kNaN || flag == Flag::kInf) {
    if (phase == "forward") return kForward;
    if (phase == "backward") return kBackward;
    if (phase == "optimizer") return kOptimizer;
  }
  return flag_guidance(flag);
}

const FlagGuidance& loss_scale_guidance(bool warning) {
  static const FlagGuidance kInfo{
      "The loss scaler skipped these steps because their scaled gradients overflowed, and "
      "lowered the scale until they fit: its normal calibration. Skipped steps changed no "
      "parameter, and the model's verdict leaves their gradients out.",
      "Nothing to do. To skip fewer steps at the start, begin with a lower initial scale "
      "(GradScaler's init_scale).",
      "Skips stay rare after the scale first fits."};
  static const FlagGuidance kWarning{
      "The loss scaler keeps skipping steps: the model trains on few of them, or none. When "
      "the scale has fallen below 1, or skips persist at any scale, the gradients are not "
      "finite for a reason other than the float16 range: a NaN or Inf born in the forward "
      "pass or in backward.",
      "Find where the values stop being finite: run a few steps without autocast, or in "
      "float32, with the audit on, and read the NaN origin; check the loss for log or "
      "division of non-positive values. If the values are finite in float32, compute that "
      "part in float32 under autocast.",
      "The scale stays above 1 and steps are skipped only rarely after it first fits."};
  return warning ? kWarning : kInfo;
}

const FlagGuidance& flag_guidance(Flag flag) {
  const int i = static_cast<int>(flag);
  return kGuidance[i >= 0 && i < kFlagCount ? i : 0];
}

const char* flag_advice(Flag flag) { return flag_guidance(flag).action; }

const char* confidence_name(Confidence c) {
  switch (c) {
    case Confidence::kLow:
      return "low";
    case Confidence::kMedium:
      return "medium";
    case Confidence::kHigh:
      return "high";
  }
  return "low";
}

}  // namespace gradscope
