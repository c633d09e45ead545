#include "store/internal/record_codec.h"

#include <cstring>

#include "store/internal/field_codec.h"

namespace gradscope::internal {
void append_varint(std::string& blob, uint64_t v) {
  char buf[10];
  blob.append(buf, static_cast<std::size_t>(write_varint(buf, v) - buf));
}

void append_double(std::string& blob, double v) {
  char buf[8];
  blob.append(buf, static_cast<std::size_t>(write_double(buf, v) - buf));
}

void append_stats(std::string& blob, const Stats& s) { append_fields<kStatsFields>(blob, s); }

void append_record(std::string& blob, uint32_t node, uint8_t site, const Stats& s) {
  append_varint(blob, node);
  blob.push_back(static_cast<char>(site));
  append_stats(blob, s);
}

bool BlobReader::byte(uint8_t& v) {
  if (p_ == end_) return false;
  v = *p_++;
  return true;
}

bool BlobReader::bytes(std::size_t n, std::string_view& out) {
  if (left() < n) return false;
  out = std::string_view(reinterpret_cast<const char*>(p_), n);
  p_ += n;
  return true;
}

bool BlobReader::stats(Stats& s) { return read_fields<kStatsFields>(*this, s); }

StepDecoder::StepDecoder(std::string_view blob, uint64_t count) : in_(blob), count_(count) {
  if (count_ > blob.size()) ok_ = false;  // every record takes well over one byte
}

bool StepDecoder::next(StoredRecord& out) {
  if (!ok_) return false;
  if (read_ == count_) {
    if (in_.left() != 0) ok_ = false;  // trailing bytes: not what the writer wrote
    return false;
  }
  uint64_t node;
  if (!in_.varint(node) || !in_.byte(out.site) || !in_.stats(out.stats) || node > UINT32_MAX) return ok_ = false;
  out.node = static_cast<uint32_t>(node);
  ++read_;
  return true;
}

namespace {

// Multiply-xorshift over 8-byte words: fast (several GB/s) and enough to notice damage. Each
// round is a bijection of the state, so a different start or one different word always ends
// in a different checksum.
uint64_t mix(uint64_t h, uint64_t word) {
  h = (h ^ word) * 0xff51afd7ed558ccdull;
  return h ^ (h >> 29);
}

uint64_t absorb(uint64_t h, std::string_view bytes) {
  std::size_t i = 0;
  for (; i + 8 <= bytes.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, bytes.data() + i, 8);
    h = mix(h, w);
  }
  uint64_t tail = 0;
  if (i < bytes.size()) std::memcpy(&tail, bytes.data() + i, bytes.size() - i);
  return mix(h, tail);
}

int64_t finish(uint64_t h) {
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 32;
  return static_cast<int64_t>(h);
}

constexpr uint64_t kStart = 0x9E3779B97F4A7C15ull;

}  // namespace

int64_t checksum64(std::string_view blob) {
  // Schema 1: the tail word went through the last multiply without the xorshift.
  uint64_t h = kStart ^ blob.size();
  std::size_t i = 0;
  for (; i + 8 <= blob.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, blob.data() + i, 8);
    h = mix(h, w);
  }
  uint64_t tail = 0;
  if (i < blob.size()) std::memcpy(&tail, blob.data() + i, blob.size() - i);
  return finish(h ^ tail);
}

int64_t step_checksum(int64_t step, std::string_view blob) {
  return finish(absorb(mix(kStart ^ blob.size(), static_cast<uint64_t>(step)), blob));
}

int64_t row_checksum(std::initializer_list<std::string_view> fields) {
  uint64_t h = kStart ^ fields.size();
  for (std::string_view f : fields) h = absorb(mix(h, f.size()), f);
  return finish(h);
}

int64_t table_step_checksum(std::string_view table, int64_t step, std::string_view blob) {
  return row_checksum({table, std::to_string(step), blob});
}

}  // namespace gradscope::internal
