// Checks for a table declared once beside its enum (kFlags, kTreeFlags, kFindingKindRows): row i
// describes the enum's value i, so a lookup is an index and a row out of order fails to compile.
//
//   static_assert(rows_in_enum_order(kTreeFlags, &TreeFlagInfo::flag), "...");
#pragma once

#include <cstddef>

namespace gradscope {

/// Whether rows[i].*key is the enum's value i for every row.
template <class Row, std::size_t N, class Enum>
constexpr bool rows_in_enum_order(const Row (&rows)[N], Enum Row::*key) {
  for (std::size_t i = 0; i < N; ++i)
    if (static_cast<std::size_t>(rows[i].*key) != i) return false;
  return true;
}

}  // namespace gradscope
