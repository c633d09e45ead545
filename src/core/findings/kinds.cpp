#include "gradscope/core/findings/kinds.h"

#include "gradscope/core/vocabulary/flags.h"
#include "gradscope/core/trees/dynamics.h"

namespace gradscope {

const char* finding_kind_name(FindingKind kind) {
  const int i = static_cast<int>(kind);
  return i >= 0 && i < kFindingKindCount ? kFindingKindRows[i].name : "?";
}

const char* finding_since_unit(FindingKind kind) {
  const int i = static_cast<int>(kind);
  return i >= 0 && i < kFindingKindCount ? kFindingKindRows[i].since_unit : "step";
}

std::optional<FindingKind> parse_finding_kind(const std::string& name) {
  for (FindingKind k : kFindingKinds)
    if (name == finding_kind_name(k)) return k;
  return std::nullopt;
}

std::vector<std::string> finding_types(FindingKind kind) {
  std::vector<std::string> types;
  switch (kind) {
    case FindingKind::kModule:
      for (int f = 0; f < kFlagCount; ++f)
        if (static_cast<Flag>(f) != Flag::kHealthy) types.push_back(flag_name(static_cast<Flag>(f)));
      break;
    case FindingKind::kFlow: types = {kGradientFlow}; break;
    case FindingKind::kEmbedding:
      types = {kZombieRows, kDeadRows, kPopularityBias, kNegativeSamplerSkew, kRepresentationCollapse};
      break;
    case FindingKind::kTrees:
      for (int f = 0; f < kTreeFlagCount; ++f) types.push_back(tree_flag_name(static_cast<TreeFlag>(f)));
      break;
    case FindingKind::kLossScale: types = {kLossScaleOverflow}; break;
    case FindingKind::kLoss: types = {kLossSpike, kDivergence, kLossOutOfRange}; break;
    case FindingKind::kEnd: break;
  }
  return types;
}

bool is_finding_type(const std::string& type) {
  for (FindingKind k : kFindingKinds)
    for (const std::string& t : finding_types(k))
      if (t == type) return true;
  return false;
}

}  // namespace gradscope
