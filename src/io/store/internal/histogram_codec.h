// The binary layout of one step's element histograms inside the run database (schema 4, table
// histograms; one row per step that has any, like channels).
//
// Little endian, per histogram: varint node id, u8 site id (as in a record), varint num, varint
// nonfinite, f64 min, max, sum, sum_squares, varint bucket count, then per non-empty bucket: varint
// (index - previous index - 1, the first from -1), varint count. Indices are into
// histogram_bucket_limits() (core/audit/element_histogram.h), ascending; the counts add up to num.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gradscope/core/audit/element_histogram.h"

namespace gradscope::internal {

/// A decoded histogram: the node as its id in table nodes, the site as its stored byte.
struct StoredHistogram {
  uint32_t node = 0;
  uint8_t site = 0;
  ElementHistogram histogram;  ///< node empty, site unset
};

void append_histogram(std::string& blob, uint32_t node, uint8_t site, const ElementHistogram& h);

/// Decodes a blob the row says holds `count` histograms into `out` (cleared first); false when
/// it is malformed (truncated, trailing bytes, an index past the last bucket or out of order,
/// counts that do not add up to num).
bool decode_histograms(std::string_view blob, uint64_t count, std::vector<StoredHistogram>& out);

}  // namespace gradscope::internal
