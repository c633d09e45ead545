// The kinds of finding (Finding::kind) and every type a finding of each kind may have, declared
// once: the rules that make findings, the CLI's gates (`diff --fail-on`) and the docs read them
// from here, so that a gate can refuse a type no rule makes instead of never matching it.
//
//   for (gradscope::FindingKind k : gradscope::kFindingKinds)
//     for (const std::string& type : gradscope::finding_types(k)) std::cout << type << "\n";
//   gradscope::is_finding_type("NANN");   // false: a typo, not a type
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/enum_table.h"

#include "gradscope/core/vocabulary/finding_types.h"

namespace gradscope {

/// Where a finding comes from: the module audit, gradient flow, embedding tables, boosted
/// trees, the loss scaler, the loss and global gradient norm series (core/series).
enum class FindingKind : uint8_t {
  kModule, kFlow, kEmbedding, kTrees, kLossScale, kLoss,
  kEnd,  ///< not a kind: the count (a kind before it without a row does not compile)
};

struct FindingKindInfo {
  FindingKind kind;
  const char* name;        ///< Finding::kind
  const char* since_unit;  ///< what since_step counts
};

/// One row per kind, in the order findings are listed.
inline constexpr FindingKindInfo kFindingKindRows[] = {
    {FindingKind::kModule, "module", "step"},     {FindingKind::kFlow, "flow", "step"},
    {FindingKind::kEmbedding, "embedding", "step"}, {FindingKind::kTrees, "trees", "round"},
    {FindingKind::kLossScale, "loss_scale", "step"}, {FindingKind::kLoss, "loss", "step"},
};
inline constexpr int kFindingKindCount = static_cast<int>(FindingKind::kEnd);

static_assert(std::size(kFindingKindRows) == kFindingKindCount, "kFindingKindRows: every kind has one row");
static_assert(rows_in_enum_order(kFindingKindRows, &FindingKindInfo::kind),
              "kFindingKindRows: row i must describe FindingKind(i)");

/// Every kind, in the order findings are listed.
inline constexpr auto kFindingKinds = [] {
  std::array<FindingKind, kFindingKindCount> kinds{};
  for (int i = 0; i < kFindingKindCount; ++i) kinds[static_cast<std::size_t>(i)] = kFindingKindRows[i].kind;
  return kinds;
}();

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
