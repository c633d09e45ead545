// The kinds of finding (Finding::kind) and every type a finding of each kind may have, declared
// once: the rules that make findings, the CLI's gates (`diff --fail-on`) and the docs read them
// from here, so that a gate can refuse a type no rule makes instead of never matching it.
//
//   for (gradscope::FindingKind k : gradscope::kFindingKinds)
//     for (const std::string& type : gradscope::finding_types(k)) std::cout << type << "\n";
//   gradscope::is_finding_type("NANN");   // false: a typo, not a type
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/vocabulary/finding_types.h"

namespace gradscope {

/// Where a finding comes from: the module audit, gradient flow, embedding tables, boosted
/// trees, the loss scaler, the loss and global gradient norm series (core/series).
enum class FindingKind : uint8_t { kModule, kFlow, kEmbedding, kTrees, kLossScale, kLoss };

/// Every kind, in the order findings are listed.
inline constexpr FindingKind kFindingKinds[] = {FindingKind::kModule, FindingKind::kFlow, FindingKind::kEmbedding,
                                                FindingKind::kTrees, FindingKind::kLossScale, FindingKind::kLoss};

/// "module", "flow", "embedding", "trees", "loss_scale", "loss" (Finding::kind).
const char* finding_kind_name(FindingKind kind);

/// What a finding's since_step counts: "round" for trees, "step" for every other kind.
const char* finding_since_unit(FindingKind kind);

/// The kind named `name`; nullopt for any other text.
std::optional<FindingKind> parse_finding_kind(const std::string& name);

/// The types a finding of `kind` may have (Finding::type): the module flags but HEALTHY,
/// GRADIENT_FLOW, the embedding rules' types, the tree flags, LOSS_SCALE_OVERFLOW, LOSS_SPIKE,
/// DIVERGENCE and LOSS_OUT_OF_RANGE.
std::vector<std::string> finding_types(FindingKind kind);

/// Whether some kind has a finding type `type` (EXPLODING and STAGNANT belong to two kinds).
bool is_finding_type(const std::string& type);

}  // namespace gradscope
