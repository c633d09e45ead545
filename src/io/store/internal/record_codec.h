// The binary layout of one step's records inside the run database (schema versions 1 to 3),
// and the checksums stored beside each row.
//
// A step is one row (its record count in a column); its blob is, little endian, per record:
//   varint node id, u8 site id, then the Stats as kStatsFields lists it (field_codec.h):
//   varint count, varint (count - finite), varint nan, varint pos_inf, varint neg_inf,
//   varint zero, varint saturated, f64 sum, sum_sq, sum_abs, min, max, max_abs (IEEE bits,
//   so values round-trip exactly). tests/io/store_format_test.cpp pins these bytes.
// Small counts take one byte, so a record is about 60 bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <string_view>

#include "gradscope/core/stats/stats.h"

namespace gradscope::internal {

/// One record as stored: ids instead of names.
struct StoredRecord {
  uint32_t node = 0;
  uint8_t site = 0;
  Stats stats;
};

void append_record(std::string& blob, uint32_t node, uint8_t site, const Stats& stats);

/// A varint (7 bits a byte, low first; at most 10 bytes) and a double (its IEEE bytes, little
/// endian) written at `at`; each returns the end of what it wrote.
inline char* write_varint(char* at, uint64_t v) {
  while (v >= 0x80) {
    *at++ = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  *at++ = static_cast<char>(v);
  return at;
}
inline char* write_double(char* at, double v) {
  // The build targets little-endian hosts (x86-64, aarch64); memcpy keeps the IEEE bits.
  std::memcpy(at, &v, sizeof v);
  return at + sizeof v;
}

/// The pieces of a record, for the other blobs (channel_codec.h): a varint, an f64,
/// and a Stats as a record stores it after its site byte (its kStatsFields: 7 varints, 6 f64).
void append_varint(std::string& blob, uint64_t v);
void append_double(std::string& blob, double v);
void append_stats(std::string& blob, const Stats& stats);

/// The fewest bytes a record's fields take as field_codec.h writes them (a count one byte, a
/// double eight): a bound on how many records a blob can hold.
template <class Fields>
constexpr std::size_t min_field_bytes(const Fields& fields) {
  std::size_t n = 0;
  for (const auto& f : fields) n += f.real ? 8 : 1;
  return n;
}
inline constexpr std::size_t kMinStatsBytes = min_field_bytes(kStatsFields);

/// Reads those pieces back; each returns false, leaving the value unspecified, when the blob
/// ends first or the data cannot be what the writer wrote.
class BlobReader {
 public:
  explicit BlobReader(std::string_view blob)
      : p_(reinterpret_cast<const unsigned char*>(blob.data())), end_(p_ + blob.size()) {}
  // varint and f64 inline: the record codecs call them once a field (field_codec.h).
  bool varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      const unsigned char b = *p_++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  }
  bool byte(uint8_t& v);
  bool f64(double& v) {
    if (end_ - p_ < 8) return false;
    std::memcpy(&v, p_, sizeof v);
    p_ += 8;
    return true;
  }
  bool bytes(std::size_t n, std::string_view& out);
  bool stats(Stats& s);
  std::size_t left() const { return static_cast<std::size_t>(end_ - p_); }

 private:
  const unsigned char* p_;
  const unsigned char* end_;
};

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
  BlobReader in_;
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

/// Schema 3: the checksum of a row of channels or similarities: the table's name, the step
/// and the blob, so a row moved to another step or to the other table is noticed.
int64_t table_step_checksum(std::string_view table, int64_t step, std::string_view blob);

}  // namespace gradscope::internal
