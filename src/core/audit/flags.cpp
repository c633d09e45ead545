#include "gradscope/core/audit/flags.h"

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
  }
  return "invalid";
}

const char* flag_name(Flag flag) {
  switch (flag) {
    case Flag::kHealthy: return "HEALTHY";
    case Flag::kVanishing: return "VANISHING";
    case Flag::kExploding: return "EXPLODING";
    case Flag::kNaN: return "NAN";
    case Flag::kInf: return "INF";
    case Flag::kDead: return "DEAD";
    case Flag::kSaturated: return "SATURATED";
    case Flag::kNoData: return "NO_DATA";
    case Flag::kFrozen: return "FROZEN";
    case Flag::kStagnant: return "STAGNANT";
    case Flag::kDeadChannels: return "DEAD_CHANNELS";
    case Flag::kIgnoredChannels: return "IGNORED_CHANNELS";
    case Flag::kLeakage: return "LEAKAGE";
  }
  return "INVALID";
}

int flag_severity(Flag flag) {
  switch (flag) {
    case Flag::kHealthy: return 0;
    case Flag::kNoData: return 1;
    case Flag::kFrozen: return 2;
    case Flag::kLeakage: return 3;
    case Flag::kIgnoredChannels: return 4;
    case Flag::kSaturated: return 5;
    case Flag::kDeadChannels: return 6;
    case Flag::kStagnant: return 7;
    case Flag::kVanishing: return 8;
    case Flag::kDead: return 9;
    case Flag::kExploding: return 10;
    case Flag::kInf: return 11;
    case Flag::kNaN: return 12;
  }
  return 0;
}

// flag_advice lives in findings/guidance.cpp with the rest of each flag's guidance.

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
