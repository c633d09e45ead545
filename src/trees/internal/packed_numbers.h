// An array of numbers kept as one binary JSON value instead of one JSON value an element: the
// UBJSON reader packs XGBoost's per-node arrays so, since building and freeing a value per
// node was most of what reading a round cost. The readers' array functions (model_json.h)
// take either form; UBJSON itself has no binary values, so a packed one cannot be confused
// with the file's own data.
#pragma once

#include <cstdint>
#include <vector>

#include "internal/json_field.h"

namespace gradscope::trees_internal {

/// One element as the parser gave it: a signed or unsigned integer, or a float.
struct PackedNumber {
  enum class Kind : uint8_t { kInteger, kUnsigned, kFloat } kind = Kind::kInteger;
  int64_t integer = 0;
  uint64_t unsigned_integer = 0;
  double floating = 0;
};

/// `numbers` as one binary value (subtype kPackedSubtype).
internal::Field::Json pack_numbers(const std::vector<PackedNumber>& numbers);
/// Whether `v` is a value pack_numbers made.
bool is_packed(const internal::Field::Json& v);
/// The elements of a packed value.
std::size_t packed_size(const internal::Field::Json& v);
/// Element `i` of a packed value as the JSON number it was.
internal::Field::Json packed_element(const internal::Field::Json& v, std::size_t i);

}  // namespace gradscope::trees_internal
