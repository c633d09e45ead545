// The wire format of RankMerge and the merge of what the ranks sent; no LibTorch here, so the
// arithmetic is tested without processes (tests/torch/distributed_wire_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/record_field.h"
#include "gradscope/core/stats/stats.h"

namespace gradscope::torch::internal {

/// Buffer header: magic, step, slot count, then the views part's word count and layout hash
/// (views.h; 0 and 0 at a step without views), so that the ranks agree on the
/// views' size before they send them.
inline constexpr std::size_t kHeaderWords = 5;
inline constexpr int64_t kMagic = 0x6772616473636f70;  // "gradscop"
/// Sites a slot can hold: kActivation .. kPreActivation (the tree sites are never merged).
inline constexpr std::size_t kSlotSites = 8;
/// A slot: present flag, then the fields of kStatsFields (pack_fields).
inline constexpr std::size_t kSlotWords = 1 + kStatsFields.size();

/// Writes `s` into `slot` (kSlotWords words) and marks it present.
void pack(const Stats& s, int64_t* slot);
/// Reads a slot written by pack().
Stats unpack(const int64_t* slot);
/// True when the slot is present and counts NaN or Inf.
bool has_nonfinite(const int64_t* slot);
/// Merges slot `slot` of every rank's buffer (`ranks[r]` points at rank r's first slot) into
/// `out`, in rank order. Parameter sites (values, gradients, updates) whose bits are the same
/// on every rank are taken once: after a gradient all-reduce each rank holds the same tensor.
/// Not when `sharded`: each rank holds a different shard of the node's parameters, which add
/// up even when two shards happen to have the same bits (two all-zero gradient shards).
/// `share_batch` (every rank runs the same samples, tensor parallelism): the other sites too
/// are taken once when every rank holds the same bits (a replicated output), else added (a
/// slice of the features each). Returns false when no rank has the slot.
bool merge_slot(const std::vector<const int64_t*>& ranks, std::size_t slot, Site site, Stats& out,
                bool sharded = false, bool share_batch = false);

/// FNV-1a over the nodes and their descriptions, in order.
uint64_t hash_nodes(const std::vector<std::string>& nodes, const std::vector<std::string>& descriptions);
/// "id: description" lines, in order.
std::string join_nodes(const std::vector<std::string>& nodes, const std::vector<std::string>& descriptions);
/// Names how the first rank whose text differs from rank 0's differs ("rank 1 lacks 'fc2'
/// (float32[4, 8]) of rank 0"), from every rank's join_nodes() text.
std::string describe_difference(const std::vector<std::string>& texts);

/// A double's bits as one int64 word of a buffer, and back: exact, NaN payloads kept.
int64_t double_bits(double x);
double bits_double(int64_t w);

/// Writes `o`'s fields as its table lists them (core/record_field.h), one word each: a count
/// as it is, a double as its bits. A record crosses the wire only this way, so a field in the
/// table cannot be dropped between ranks.
template <const auto& kFields, class Owner>
void pack_fields(const Owner& o, int64_t* w) {
  for_each_field<kFields>([&](auto i) {
    constexpr RecordField<Owner> f = kFields[i];
    if constexpr (f.real != nullptr) w[i] = double_bits(o.*f.real);
    else w[i] = o.*f.count;
  });
}

/// Reads what pack_fields() wrote.
template <const auto& kFields>
auto unpack_fields(const int64_t* w) {
  using Owner = typename std::decay_t<decltype(kFields[0])>::owner_type;
  Owner o;
  for_each_field<kFields>([&](auto i) {
    constexpr RecordField<Owner> f = kFields[i];
    if constexpr (f.real != nullptr) o.*f.real = bits_double(w[i]);
    else o.*f.count = w[i];
  });
  return o;
}

}  // namespace gradscope::torch::internal
