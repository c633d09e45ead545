#include "store/internal/channel_codec.h"

#include "store/internal/field_codec.h"
#include "store/internal/record_codec.h"

namespace gradscope::internal {
namespace {

bool node_id(BlobReader& in, uint32_t& node) {
  uint64_t v;
  if (!in.varint(v) || v > UINT32_MAX) return false;
  node = static_cast<uint32_t>(v);
  return true;
}

// The count is checked against the bytes left before anything is allocated: a hostile count
// of 2^60 channels is malformed, not a bad_alloc.
bool stats_list(BlobReader& in, std::vector<Stats>& out) {
  uint64_t n;
  if (!in.varint(n) || n > in.left() / kMinStatsBytes) return false;
  out.resize(static_cast<std::size_t>(n));
  for (Stats& s : out)
    if (!in.stats(s)) return false;
  return true;
}

void append_stats_list(std::string& blob, const std::vector<Stats>& list) {
  append_varint(blob, list.size());
  for (const Stats& s : list) append_stats(blob, s);
}

// Every record takes more than one byte, so a count above the blob's size is malformed.
template <class T, class Decode>
bool decode_all(std::string_view blob, uint64_t count, std::vector<StoredWithNode<T>>& out, Decode decode) {
  out.clear();
  if (count > blob.size()) return false;
  BlobReader in(blob);
  out.resize(static_cast<std::size_t>(count));
  for (StoredWithNode<T>& r : out)
    if (!node_id(in, r.node) || !decode(in, r.record)) return false;
  return in.left() == 0;
}

}  // namespace

void append_channel(std::string& blob, uint32_t node, const ChannelRecord& c) {
  append_varint(blob, node);
  append_stats_list(blob, c.activation);
  append_stats_list(blob, c.output_grad);
  append_double(blob, c.effective_rank);
}

void append_similarity(std::string& blob, uint32_t node, const SimilarityRecord& s) {
  append_varint(blob, node);
  append_varint(blob, s.other.size());
  blob += s.other;
  append_double(blob, s.cka);
}

void append_attention(std::string& blob, uint32_t node, const AttentionRecord& a) {
  append_varint(blob, node);
  append_varint(blob, a.heads.size());
  for (const HeadStats& h : a.heads) append_fields<kHeadStatsFields>(blob, h);
}

bool decode_channels(std::string_view blob, uint64_t count, std::vector<StoredWithNode<ChannelRecord>>& out) {
  return decode_all(blob, count, out, [](BlobReader& in, ChannelRecord& c) {
    return stats_list(in, c.activation) && stats_list(in, c.output_grad) && in.f64(c.effective_rank);
  });
}

bool decode_similarities(std::string_view blob, uint64_t count,
                         std::vector<StoredWithNode<SimilarityRecord>>& out) {
  return decode_all(blob, count, out, [](BlobReader& in, SimilarityRecord& s) {
    uint64_t n;
    std::string_view other;
    if (!in.varint(n) || !in.bytes(n, other) || !in.f64(s.cka)) return false;
    s.other.assign(other);
    return true;
  });
}

namespace {

constexpr uint64_t kMinHeadBytes = min_field_bytes(kHeadStatsFields);

// A head whose counts no writer could have written: negative (a varint past INT64_MAX), or more
// queries with a property than queries counted.
bool head_ok(const HeadStats& h) {
  for (const RecordField<HeadStats>& f : kHeadStatsFields)
    if (f.count && h.*f.count < 0) return false;
  return h.fraction_queries <= h.queries && h.top_queries <= h.queries;
}

}  // namespace

bool decode_attention(std::string_view blob, uint64_t n, std::vector<StoredWithNode<AttentionRecord>>& out) {
  return decode_all(blob, n, out, [](BlobReader& in, AttentionRecord& a) {
    uint64_t heads;
    if (!in.varint(heads) || heads > in.left() / kMinHeadBytes) return false;
    a.heads.resize(static_cast<std::size_t>(heads));
    for (HeadStats& h : a.heads)
      if (!read_fields<kHeadStatsFields>(in, h) || !head_ok(h)) return false;
    return true;
  });
}

void append_scalar(std::string& blob, int64_t row_step, const StepScalar& x) {
  append_varint(blob, static_cast<uint64_t>(row_step - x.step));
  append_varint(blob, x.name.size());
  blob += x.name;
  append_double(blob, x.value);
}

bool decode_scalars(std::string_view blob, uint64_t n, int64_t row_step, std::vector<StepScalar>& out) {
  out.clear();
  constexpr uint64_t kMinScalarBytes = 1 + 1 + 8;
  if (n > blob.size() / kMinScalarBytes) return false;
  BlobReader in(blob);
  out.resize(static_cast<std::size_t>(n));
  int64_t previous = -1;
  for (StepScalar& x : out) {
    uint64_t back, length;
    std::string_view name;
    if (!in.varint(back) || back > static_cast<uint64_t>(row_step)) return false;
    x.step = row_step - static_cast<int64_t>(back);
    if (x.step < previous) return false;
    previous = x.step;
    if (!in.varint(length) || length > kMaxScalarName || !in.bytes(length, name) || !in.f64(x.value)) return false;
    x.name.assign(name);
  }
  return in.left() == 0;
}

}  // namespace gradscope::internal
