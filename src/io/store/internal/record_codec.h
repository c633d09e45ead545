// The binary layout of one step's records inside the run database (schema versions 1 to 3),
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

#include "gradscope/core/stats/stats.h"

namespace gradscope::internal {

/// One record as stored: ids instead of names.
struct StoredRecord {
  uint32_t node = 0;
  uint8_t site = 0;
  Stats stats;
};

void append_record(std::string& blob, uint32_t node, uint8_t site, const Stats& stats);

/// The pieces of a record, for the other blobs (channel_codec.h): a varint, an f64,
/// and a Stats as a record stores it after its site byte (7 varints, 6 f64).
void append_varint(std::string& blob, uint64_t v);
void append_double(std::string& blob, double v);
void append_stats(std::string& blob, const Stats& stats);

/// The fewest bytes append_stats writes: a bound on how many summaries a blob can hold.
inline constexpr std::size_t kMinStatsBytes = 7 + 48;

/// Reads those pieces back; each returns false, leaving the value unspecified, when the blob
/// ends first or the data cannot be what the writer wrote.
class BlobReader {
 public:
  explicit BlobReader(std::string_view blob)
      : p_(reinterpret_cast<const unsigned char*>(blob.data())), end_(p_ + blob.size()) {}
  bool varint(uint64_t& v);
  bool byte(uint8_t& v);
  bool f64(double& v);
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
