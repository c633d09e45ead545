// The binary layout of one step's channel records and similarity records inside the run
// database (schema 3, tables channels and similarities; one row per step, like steps), and of
// its attention records (schema 6, table attention).
//
// Little endian, per channel record: varint node id, varint activation channels, each a Stats
// as a record stores it (record_codec.h), varint output-gradient channels, each a
// Stats, f64 effective rank (NaN when not measured). Per similarity record: varint node id,
// varint length of `other`, its bytes, f64 CKA. Per attention record: varint node id, varint
// heads, per head the fields of kHeadStatsFields in its order (field_codec.h: a count as a
// varint, a double as f64): queries, non-finite queries, max logit, entropy sum, fraction
// queries, entropy-fraction sum, top queries. Per scalar (schema 7,
// table scalars): varint (row step - its step), varint length of its name, the name's bytes, f64
// value. Doubles keep their IEEE bits, so the report
// built from a saved run equals the one built in memory.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gradscope/core/attention/rules.h"
#include "gradscope/core/audit/channels.h"
#include "gradscope/core/series/rules.h"

namespace gradscope::internal {

void append_channel(std::string& blob, uint32_t node, const ChannelRecord& record);
void append_similarity(std::string& blob, uint32_t node, const SimilarityRecord& record);
void append_attention(std::string& blob, uint32_t node, const AttentionRecord& record);
/// `scalar.step` must not be above `row_step`.
void append_scalar(std::string& blob, int64_t row_step, const StepScalar& scalar);

/// A decoded record with the node as its id in table nodes (record.node left empty).
template <class T>
struct StoredWithNode {
  uint32_t node = 0;
  T record;
};

/// Decodes a blob the row says holds `count` records into `out` (cleared first); false when it
/// is malformed (truncated, trailing bytes, counts larger than the bytes could hold).
bool decode_channels(std::string_view blob, uint64_t count, std::vector<StoredWithNode<ChannelRecord>>& out);
bool decode_similarities(std::string_view blob, uint64_t count,
                         std::vector<StoredWithNode<SimilarityRecord>>& out);
/// Also false for a head's counts beyond int64 or that contradict each other.
bool decode_attention(std::string_view blob, uint64_t count, std::vector<StoredWithNode<AttentionRecord>>& out);
/// Also false for a step below 0 or above the row's, steps that go back, or a name longer
/// than kMaxScalarName.
inline constexpr uint64_t kMaxScalarName = 256;
bool decode_scalars(std::string_view blob, uint64_t count, int64_t row_step, std::vector<StepScalar>& out);

}  // namespace gradscope::internal
