// The binary layout of one step's records inside the run database (schema versions 1 and 2),
// and the checksums stored beside each row.
//
// A step is one row (its record count in a column); its blob is, little endian, per record:
//   varint node id, u8 site id, varint count, varint (count - finite), varint nan,
//   varint pos_inf, varint neg_inf, varint zero, varint saturated,
//   f64 sum, sum_sq, sum_abs, min, max, max_abs (IEEE bits, so values round-trip exactly).
// Small counts take one byte, so a record is about 60 bytes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "gradscope/core/stats.h"

namespace gradscope::internal {

/// One record as stored: ids instead of names.
struct StoredRecord {
  uint32_t node = 0;
  uint8_t site = 0;
  Stats stats;
};

void append_record(std::string& blob, uint32_t node, uint8_t site, const Stats& stats);

/// Reads a step blob; false when it is malformed (truncated, trailing bytes, bad counts).
class StepDecoder {
 public:
  /// `count`: the records the row says the blob holds.
  StepDecoder(std::string_view blob, uint64_t count);
  bool ok() const { return ok_; }
  uint64_t count() const { return count_; }
  /// Next record; false at the end or on malformed data (then ok() is false).
  bool next(StoredRecord& out);

 private:
  bool varint(uint64_t& v);
  const unsigned char* p_;
  const unsigned char* end_;
  uint64_t count_ = 0, read_ = 0;
  bool ok_ = true;
};

/// 64-bit checksum of a step's blob, as schema 1 stored it (the step number not covered).
int64_t checksum64(std::string_view blob);

/// Schema 2: the checksum of a step row covers its step number too, so a damaged key cannot
/// move records to another step unnoticed.
int64_t step_checksum(int64_t step, std::string_view blob);

/// Schema 2: the checksum of any other row (nodes, sites, meta) over its fields, each with its
/// length, so fields cannot trade bytes unnoticed.
int64_t row_checksum(std::initializer_list<std::string_view> fields);

}  // namespace gradscope::internal
