#include "store/internal/record_codec.h"

#include <cstring>

namespace gradscope::internal {
namespace {

inline void put_varint(std::string& out, uint64_t v) {
  char buf[10];
  int n = 0;
  while (v >= 0x80) {
    buf[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  buf[n++] = static_cast<char>(v);
  out.append(buf, static_cast<std::size_t>(n));
}

inline void put_double(char* at, double v) {
  // The build targets little-endian hosts (x86-64, aarch64); memcpy keeps the IEEE bits.
  std::memcpy(at, &v, sizeof v);
}

}  // namespace

void append_varint(std::string& blob, uint64_t v) { put_varint(blob, v); }

void append_double(std::string& blob, double v) {
  char buf[8];
  put_double(buf, v);
  blob.append(buf, sizeof buf);
}

void append_stats(std::string& blob, const Stats& s) {
  put_varint(blob, static_cast<uint64_t>(s.count));
  put_varint(blob, static_cast<uint64_t>(s.count - s.finite));
  put_varint(blob, static_cast<uint64_t>(s.nan));
  put_varint(blob, static_cast<uint64_t>(s.pos_inf));
  put_varint(blob, static_cast<uint64_t>(s.neg_inf));
  put_varint(blob, static_cast<uint64_t>(s.zero));
  put_varint(blob, static_cast<uint64_t>(s.saturated));
  char buf[48];
  put_double(buf, s.sum);
  put_double(buf + 8, s.sum_sq);
  put_double(buf + 16, s.sum_abs);
  put_double(buf + 24, s.min);
  put_double(buf + 32, s.max);
  put_double(buf + 40, s.max_abs);
  blob.append(buf, sizeof buf);
}

void append_record(std::string& blob, uint32_t node, uint8_t site, const Stats& s) {
  put_varint(blob, node);
  blob.push_back(static_cast<char>(site));
  append_stats(blob, s);
}

bool BlobReader::varint(uint64_t& v) {
  v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p_ == end_) return false;
    const unsigned char b = *p_++;
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

bool BlobReader::byte(uint8_t& v) {
  if (p_ == end_) return false;
  v = *p_++;
  return true;
}

bool BlobReader::f64(double& v) {
  if (end_ - p_ < 8) return false;
  std::memcpy(&v, p_, sizeof v);
  p_ += 8;
  return true;
}

bool BlobReader::bytes(std::size_t n, std::string_view& out) {
  if (left() < n) return false;
  out = std::string_view(reinterpret_cast<const char*>(p_), n);
  p_ += n;
  return true;
}

bool BlobReader::stats(Stats& s) {
  uint64_t count, nonfinite, nan, pinf, ninf, zero, sat;
  if (!varint(count) || !varint(nonfinite) || !varint(nan) || !varint(pinf) || !varint(ninf) || !varint(zero) ||
      !varint(sat) || end_ - p_ < 48 || nonfinite > count)
    return false;
  s.count = static_cast<int64_t>(count);
  s.finite = static_cast<int64_t>(count - nonfinite);
  s.nan = static_cast<int64_t>(nan);
  s.pos_inf = static_cast<int64_t>(pinf);
  s.neg_inf = static_cast<int64_t>(ninf);
  s.zero = static_cast<int64_t>(zero);
  s.saturated = static_cast<int64_t>(sat);
  double d[6];
  std::memcpy(d, p_, sizeof d);
  p_ += sizeof d;
  s.sum = d[0];
  s.sum_sq = d[1];
  s.sum_abs = d[2];
  s.min = d[3];
  s.max = d[4];
  s.max_abs = d[5];
  return true;
}

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
