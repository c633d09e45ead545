// The boosted-tree flags, each declared once: its name, what it implies, what fixing it
// should change, how its value compares with its threshold, and whether it names a feature
// rather than a round. The agent findings, the text and HTML reports and `diff --fail-on` read
// this table; a new tree flag is a row here, its rule (a row of kTreeRules, trees/rules.cpp)
// and a test (docs/architecture.md, "Adding a flag, a threshold or a finding kind").
//
//   const gradscope::TreeFlagInfo& info = gradscope::tree_flag_info(gradscope::TreeFlag::kExploding);
//   info.name;  // "EXPLODING"
#pragma once

#include <cstdint>
#include <iterator>

#include "gradscope/core/enum_table.h"

namespace gradscope {

/// What a tree rule concluded.
enum class TreeFlag : uint8_t {
  kStagnant,      ///< the rounds add (almost) nothing: from the start, or from round N on
  kOverfitting,   ///< validation loss rose after round N while training loss fell
  kExploding,     ///< round contributions (or leaf values) grow instead of shrinking
  kConcentrated,  ///< one feature carries most of the gain: possible leakage
  kEnd,           ///< not a flag: the count (a flag before it without a row does not compile)
};

struct TreeFlagInfo {
  TreeFlag flag;
  const char* name;             ///< upper case, as printed
  const char* comparison;       ///< "<" or ">": how the finding's value passed its threshold
  bool names_feature;           ///< the finding names a feature (TreeFinding::feature), not a round
  const char* implies;          ///< what it means for the model
  const char* expected_effect;  ///< how to tell the fix worked
};

inline constexpr TreeFlagInfo kTreeFlags[] = {
    {TreeFlag::kStagnant, "STAGNANT", "<", false,
     "Boosting rounds add (almost) nothing: they cost time and size without learning.",
     "Fewer rounds (or a higher learning rate) give the same loss."},
    {TreeFlag::kOverfitting, "OVERFITTING", ">", false,
     "Later rounds fit the training rows at the expense of unseen ones.",
     "The validation loss stops rising after its lowest point."},
    {TreeFlag::kExploding, "EXPLODING", ">", false,
     "Round contributions grow instead of shrinking: the boosting diverges.",
     "Round contributions shrink from window to window."},
    {TreeFlag::kConcentrated, "CONCENTRATED", ">", true,
     "One feature carries most of the gain: the model rests on it, possibly a leak of the label.",
     "The top feature's share of the gain falls below concentrated_share, or the feature is "
     "confirmed legitimate."},
};

inline constexpr int kTreeFlagCount = static_cast<int>(TreeFlag::kEnd);

static_assert(std::size(kTreeFlags) == kTreeFlagCount, "kTreeFlags: every flag of the enum has one row");
static_assert(rows_in_enum_order(kTreeFlags, &TreeFlagInfo::flag), "kTreeFlags: row i must describe TreeFlag(i)");

/// The row of `flag` (the first row for a value outside the enum).
constexpr const TreeFlagInfo& tree_flag_info(TreeFlag flag) {
  const int i = static_cast<int>(flag);
  return kTreeFlags[i >= 0 && i < kTreeFlagCount ? i : 0];
}

}  // namespace gradscope
