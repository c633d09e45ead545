#include "store/internal/histogram_codec.h"

#include "store/internal/record_codec.h"

namespace gradscope::internal {

void append_histogram(std::string& blob, uint32_t node, uint8_t site, const ElementHistogram& h) {
  append_varint(blob, node);
  blob.push_back(static_cast<char>(site));
  append_varint(blob, h.num);
  append_varint(blob, h.nonfinite);
  append_double(blob, h.min);
  append_double(blob, h.max);
  append_double(blob, h.sum);
  append_double(blob, h.sum_squares);
  append_varint(blob, h.buckets.size());
  int64_t previous = -1;
  for (const auto& [index, count] : h.buckets) {
    append_varint(blob, static_cast<uint64_t>(static_cast<int64_t>(index) - previous - 1));
    append_varint(blob, count);
    previous = index;
  }
}

namespace {

bool decode_one(BlobReader& in, StoredHistogram& out) {
  uint64_t node, n;
  ElementHistogram& h = out.histogram;
  if (!in.varint(node) || node > UINT32_MAX || !in.byte(out.site) || !in.varint(h.num) ||
      !in.varint(h.nonfinite) || !in.f64(h.min) || !in.f64(h.max) || !in.f64(h.sum) ||
      !in.f64(h.sum_squares) || !in.varint(n))
    return false;
  out.node = static_cast<uint32_t>(node);
  const uint64_t buckets = histogram_bucket_limits().size();
  if (n > buckets || n > in.left() / 2) return false;  // each bucket takes two bytes or more
  h.buckets.resize(static_cast<std::size_t>(n));
  int64_t previous = -1;
  uint64_t total = 0;
  for (auto& [index, count] : h.buckets) {
    uint64_t gap;
    if (!in.varint(gap) || !in.varint(count) || gap >= buckets || count == 0) return false;
    const uint64_t at = static_cast<uint64_t>(previous + 1) + gap;
    if (at >= buckets || total + count < total) return false;
    index = static_cast<uint32_t>(at);
    previous = static_cast<int64_t>(at);
    total += count;
  }
  return total == h.num;
}

}  // namespace

bool decode_histograms(std::string_view blob, uint64_t count, std::vector<StoredHistogram>& out) {
  out.clear();
  if (count > blob.size()) return false;
  BlobReader in(blob);
  out.resize(static_cast<std::size_t>(count));
  for (StoredHistogram& h : out)
    if (!decode_one(in, h)) return false;
  return in.left() == 0;
}

}  // namespace gradscope::internal
