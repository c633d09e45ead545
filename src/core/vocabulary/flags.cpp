#include "gradscope/core/vocabulary/flags.h"

namespace gradscope {

const char* site_name(Site site) {
  switch (site) {
    case Site::kActivation: return "activation";
    case Site::kOutputGrad: return "output_grad";
    case Site::kParamGrad: return "param_grad";
    case Site::kParam: return "param";
    case Site::kUpdate: return "update";
    case Site::kEmbeddingRows: return "embedding_rows";
    case Site::kFrozenParam: return "frozen_param";
    case Site::kPreActivation: return "pre_activation";
    case Site::kRoundOutput: return "round_output";
    case Site::kLeafValue: return "leaf_value";
    case Site::kSplitGain: return "split_gain";
    case Site::kRowLoss: return "row_loss";
    case Site::kAttentionLogits: return "attention_logits";
  }
  return "invalid";
}

const char* flag_name(Flag flag) {
  const int i = static_cast<int>(flag);
  return i >= 0 && i < kFlagCount ? kFlags[i].name : "INVALID";
}

int flag_severity(Flag flag) {
  for (int i = 0; i < kFlagCount; ++i)
    if (kSeverityOrder[i] == flag) return i;
  return 0;
}

const char* flag_advice(Flag flag) { return flag_info(flag).guidance.action; }

std::vector<Flag> FlagSet::list() const {
  std::vector<Flag> out;
  for (int i = 0; i < kFlagCount; ++i)
    if (contains(static_cast<Flag>(i))) out.push_back(static_cast<Flag>(i));
  return out;
}

std::string FlagSet::join(const char* sep) const {
  std::string out;
  for (Flag f : list()) {
    if (!out.empty()) out += sep;
    out += flag_name(f);
  }
  return out;
}

}  // namespace gradscope
