// The writer thread's encoder: the producer's records, channel records, similarity records and
// element histograms and attention records become one row per step in steps, channels,
// similarities, histograms and attention, and node names become ids.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "gradscope/core/attention/rules.h"
#include "gradscope/core/audit/channels.h"
#include "gradscope/core/audit/element_histogram.h"
#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/series/rules.h"
#include "store/internal/sqlite_db.h"

namespace gradscope::internal {

class StepRows {
 public:
  /// Statements on `db`, which must outlive this.
  explicit StepRows(Database& db);

  void add(const Record& record);
  void add(const ChannelRecord& record);
  void add(const SimilarityRecord& record);
  void add(const ElementHistogram& histogram);
  void add(const AttentionRecord& record);
  void add(int64_t row_step, const StepScalar& scalar);
  /// Inserts `step`'s rows (a channels or similarities row only when it has such records).
  void end_step(int64_t step);
  /// Puts the committed row counts into meta; in the transaction of the rows they count.
  void put_counts();

 private:
  uint32_t node_id(const std::string& node);

  Statement insert_node_, insert_step_, insert_channels_, insert_similarities_, insert_histograms_, insert_attention_, insert_scalars_, put_meta_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::string records_, channels_, similarities_, histograms_, attention_, scalars_;  // blobs of the step being encoded
  int64_t n_records_ = 0, n_channels_ = 0, n_similarities_ = 0, n_histograms_ = 0, n_attention_ = 0, n_scalars_ = 0;
  int64_t step_rows_ = 0, channel_rows_ = 0, similarity_rows_ = 0, histogram_rows_ = 0, attention_rows_ = 0, scalar_rows_ = 0;
};

}  // namespace gradscope::internal
