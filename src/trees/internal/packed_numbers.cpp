#include "internal/packed_numbers.h"

#include <cstring>

namespace gradscope::trees_internal {
namespace {

using Json = internal::Field::Json;

// Marks the binary values pack_numbers makes (any value; UBJSON has no binary of its own).
constexpr std::uint8_t kPackedSubtype = 42;

}  // namespace

Json pack_numbers(const std::vector<PackedNumber>& numbers) {
  std::vector<std::uint8_t> bytes(numbers.size() * sizeof(PackedNumber));
  if (!numbers.empty()) std::memcpy(bytes.data(), numbers.data(), bytes.size());
  return Json::binary(std::move(bytes), kPackedSubtype);
}

bool is_packed(const Json& v) {
  return v.is_binary() && v.get_binary().has_subtype() &&
         v.get_binary().subtype() == kPackedSubtype;
}

std::size_t packed_size(const Json& v) { return v.get_binary().size() / sizeof(PackedNumber); }

Json packed_element(const Json& v, std::size_t i) {
  PackedNumber n;
  std::memcpy(&n, v.get_binary().data() + i * sizeof(PackedNumber), sizeof n);
  switch (n.kind) {
    case PackedNumber::Kind::kInteger:
      return Json(n.integer);
    case PackedNumber::Kind::kUnsigned:
      return Json(n.unsigned_integer);
    case PackedNumber::Kind::kFloat:
      return Json(n.floating);
  }
  return Json();
}

}  // namespace gradscope::trees_internal
