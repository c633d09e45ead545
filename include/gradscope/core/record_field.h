// One field of a mergeable record that crosses a boundary (the run store, the wire between
// ranks), declared once: its name, the member it is and how two records' values combine. Such
// a record (Stats, HeadStats) keeps one table of these beside its struct; merge(), the run
// store's codec and RankMerge's wire format loop over it, so a field cannot be merged but not
// stored, or stored but dropped between ranks.
//
//   inline constexpr std::array<RecordField<HeadStats>, 7> kHeadStatsFields = {
//       count_field("queries", &HeadStats::queries),
//       real_field("max_logit", &HeadStats::max_logit, FieldMerge::kMax, &HeadStats::queries), ...};
//   HeadStats all = merge_fields<kHeadStatsFields>(a, b);
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

namespace gradscope {

/// How two records' values of a field combine.
enum class FieldMerge : uint8_t {
  kSum,  ///< added (counts saturate at the int64 limits)
  kMax,  ///< the larger
  kMin,  ///< the smaller
};

/// One field of `Owner`: an int64 count or a double.
template <class Owner>
struct RecordField {
  using owner_type = Owner;
  const char* name;
  int64_t Owner::*count = nullptr;  ///< exactly one of count and real is set
  double Owner::*real = nullptr;
  FieldMerge merge = FieldMerge::kSum;
  /// kMax and kMin: the count that says whether a side holds a value at all; a side where it
  /// is 0 gives way to the other (its placeholder, say 0, is not a value to compare).
  int64_t Owner::*present = nullptr;
  /// The run store keeps (that count - this one) instead: a count that cannot exceed another
  /// (non-finite = all - finite) is then small, and a stored value above the bound is damage.
  int64_t Owner::*stored_below = nullptr;
};

/// A count, summed.
template <class Owner>
constexpr RecordField<Owner> count_field(const char* name, int64_t Owner::*m, int64_t Owner::*stored_below = nullptr) {
  return {name, m, nullptr, FieldMerge::kSum, nullptr, stored_below};
}
/// A double: summed, or (kMax, kMin) the larger or smaller of the sides where `present` is not 0.
template <class Owner>
constexpr RecordField<Owner> real_field(const char* name, double Owner::*m, FieldMerge merge = FieldMerge::kSum,
                                        int64_t Owner::*present = nullptr) {
  return {name, nullptr, m, merge, present, nullptr};
}

/// a + b, saturating at the int64 limits: counts read from a damaged run file can be anything
/// an int64 holds, and overflowing them would be undefined behaviour.
inline int64_t add_counts(int64_t a, int64_t b) {
  int64_t r = 0;
  if (!__builtin_add_overflow(a, b, &r)) return r;
  return a < 0 ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

/// True when every member of `Owner` has its row: the records are plain 8-byte fields, so a
/// member added without a row makes the struct larger than its table (checked beside each table).
template <class Owner, class Fields>
constexpr bool fields_cover(const Fields& fields) {
  return sizeof(Owner) == fields.size() * sizeof(int64_t);
}

namespace detail {
template <const auto& kFields, class Visit, std::size_t... I>
constexpr void visit_fields(Visit& visit, std::index_sequence<I...>) {
  (visit(std::integral_constant<std::size_t, I>{}), ...);
}
template <const auto& kFields, class Visit, std::size_t... I>
constexpr bool visit_fields_while(Visit& visit, std::index_sequence<I...>) {
  return (visit(std::integral_constant<std::size_t, I>{}) && ...);
}
}  // namespace detail

/// Calls visit(i) for each row i of the table `kFields`, as a std::integral_constant, so that
/// `constexpr auto f = kFields[i]` is a constant and `if constexpr` picks the code: the loop
/// compiles to what a hand-written list of members would (the run store's codec is hot).
template <const auto& kFields, class Visit>
constexpr void for_each_field(Visit&& visit) {
  detail::visit_fields<kFields>(visit, std::make_index_sequence<kFields.size()>{});
}

/// for_each_field() while visit(i) returns true; whether it did for every row.
template <const auto& kFields, class Visit>
constexpr bool all_fields(Visit&& visit) {
  return detail::visit_fields_while<kFields>(visit, std::make_index_sequence<kFields.size()>{});
}

/// a and b combined field by field as the table `kFields` says.
template <const auto& kFields, class Owner>
Owner merge_fields(const Owner& a, const Owner& b) {
  Owner r;
  for_each_field<kFields>([&](auto i) {
    constexpr RecordField<Owner> f = kFields[i];
    if constexpr (f.count != nullptr) {
      r.*f.count = add_counts(a.*f.count, b.*f.count);
    } else if constexpr (f.merge == FieldMerge::kSum) {
      r.*f.real = a.*f.real + b.*f.real;
    } else {
      const double x = a.*f.real, y = b.*f.real;
      if (f.present != nullptr && a.*f.present == 0) r.*f.real = y;
      else if (f.present != nullptr && b.*f.present == 0) r.*f.real = x;
      else r.*f.real = f.merge == FieldMerge::kMax ? std::max(x, y) : std::min(x, y);
    }
  });
  return r;
}

}  // namespace gradscope
