// The guidance that depends on more than the flag: where a NaN was born, what the loss scaler
// did. Each flag's own guidance is its row in kFlags (vocabulary/flag_info.h).
#include "gradscope/core/findings/findings.h"

#include <string>

namespace gradscope {
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

const FlagGuidance& flag_guidance(Flag flag) { return flag_info(flag).guidance; }

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
