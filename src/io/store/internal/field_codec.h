// A record's fields in and out of a run-store blob, in the order of its table
// (core/record_field.h: kStatsFields, kHeadStatsFields): a count as a varint (a count with
// stored_below as the varint of bound - count), a double as its 8 IEEE bytes. The record
// codecs write and read every field through these, so the bytes follow the table.
#pragma once

#include <cstdint>
#include <string>

#include "gradscope/core/record_field.h"
#include "store/internal/record_codec.h"

namespace gradscope::internal {

template <const auto& kFields, class Owner>
void append_fields(std::string& blob, const Owner& o) {
  char buf[kFields.size() * 10];  // a varint takes 10 bytes at most, a double 8
  char* at = buf;
  for_each_field<kFields>([&](auto i) {
    constexpr RecordField<Owner> f = kFields[i];
    if constexpr (f.real != nullptr) at = write_double(at, o.*f.real);
    else if constexpr (f.stored_below != nullptr) at = write_varint(at, static_cast<uint64_t>(o.*f.stored_below - o.*f.count));
    else at = write_varint(at, static_cast<uint64_t>(o.*f.count));
  });
  blob.append(buf, static_cast<std::size_t>(at - buf));
}

/// Reads what append_fields() wrote; false when the blob ends first or a stored_below count
/// exceeds its bound. A varint above INT64_MAX reads as the int64 of its bits (callers that
/// refuse negative counts check them).
template <const auto& kFields, class Owner>
bool read_fields(BlobReader& in, Owner& o) {
  return all_fields<kFields>([&](auto i) {
    constexpr RecordField<Owner> f = kFields[i];
    if constexpr (f.real != nullptr) {
      return in.f64(o.*f.real);
    } else {
      uint64_t v = 0;
      if (!in.varint(v)) return false;
      if constexpr (f.stored_below != nullptr) {
        const auto bound = static_cast<uint64_t>(o.*f.stored_below);
        if (v > bound) return false;
        v = bound - v;
      }
      o.*f.count = static_cast<int64_t>(v);
      return true;
    }
  });
}

}  // namespace gradscope::internal
