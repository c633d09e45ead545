// Per-head attention statistics from the pre-softmax logits, in one pass over each query row:
// the largest logit, the entropy of the attention weights (also as a fraction of log(keys the
// query sees), so a causal mask's short early rows compare with full ones) and how many queries
// put more than kTopWeight of their weight on one key (attention collapsed onto it).
//
//   // logits [batch, heads, queries, keys], -inf where a query may not attend (a mask)
//   std::vector<gradscope::HeadStats> h = gradscope::attention_head_stats(p, {2, 4, 64, 64});
//   h[0].max_logit; h[0].mean_entropy(); h[0].mean_entropy_fraction(); h[0].top_fraction();
//   gradscope::HeadStats all = gradscope::merge(h_rank0[0], h_rank1[0]);   // ranks, chunks
//
// The weights are those of softmax over the visible keys; the statistics are computed from the
// logits without materialising them: with m the row's largest logit, z = sum exp(l - m) and
// s = sum exp(l - m) (l - m), the entropy is log z - s / z and the largest weight is 1 / z.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "gradscope/core/record_field.h"
#include "gradscope/core/stats/stats.h"

namespace gradscope {

/// A query is collapsed when its largest attention weight exceeds this.
inline constexpr double kTopWeight = 0.99;

/// Mergeable summary of one head's attention over some queries (a step, a rank, a chunk).
struct HeadStats {
  int64_t queries = 0;            ///< query rows with at least one visible key, all finite
  int64_t nonfinite_queries = 0;  ///< rows with a NaN or +Inf visible logit (left out of the rest)
  double max_logit = 0;           ///< largest visible logit over the counted rows (0 when none)
  double entropy_sum = 0;         ///< sum over counted rows of the entropy, in nats
  int64_t fraction_queries = 0;   ///< counted rows that see at least two keys
  double entropy_fraction_sum = 0;  ///< sum over those of entropy / log(visible keys)
  int64_t top_queries = 0;        ///< counted rows whose largest weight > kTopWeight

  /// Mean entropy in nats over the counted rows (NaN when none).
  double mean_entropy() const;
  /// Mean of entropy / log(visible keys) over rows seeing >= 2 keys, in [0, 1] (NaN when none).
  double mean_entropy_fraction() const;
  /// Share of counted rows whose largest weight > kTopWeight (NaN when none).
  double top_fraction() const;
};

/// Every field of HeadStats, in declaration order, with how it merges: merge(), the run store
/// (io/store/internal/channel_codec.cpp) and the ranks' wire (torch/distributed/views.cpp)
/// loop over it. A new statistic is a member above and its row here.
inline constexpr std::array<RecordField<HeadStats>, 7> kHeadStatsFields = {
    count_field("queries", &HeadStats::queries),
    count_field("nonfinite_queries", &HeadStats::nonfinite_queries),
    real_field("max_logit", &HeadStats::max_logit, FieldMerge::kMax, &HeadStats::queries),  // 0: no row
    real_field("entropy_sum", &HeadStats::entropy_sum),
    count_field("fraction_queries", &HeadStats::fraction_queries),
    real_field("entropy_fraction_sum", &HeadStats::entropy_fraction_sum),
    count_field("top_queries", &HeadStats::top_queries),
};
static_assert(fields_cover<HeadStats>(kHeadStatsFields), "a HeadStats member has no row in kHeadStatsFields");

/// Sums the counts, takes the larger max_logit (of those with counted rows). Associative.
HeadStats merge(const HeadStats& a, const HeadStats& b);

/// Dimensions of a logits array, laid out contiguously as [batch][heads][queries][keys].
struct AttentionShape {
  int64_t batch = 1, heads = 1, queries = 0, keys = 0;
};

/// One HeadStats per head over every batch row and query of `logits` (float32, contiguous as
/// `shape` says). A logit of -inf marks a key the query may not see, and so does a zero in
/// `visible` when given: [queries][keys], the same for every batch row and head (a causal
/// mask), read in place of a masked copy of the logits. A row with no key visible is not
/// counted. `kernel` picks the scalar or the AVX2 code (kAuto: the fastest this CPU runs; the
/// two agree to float rounding). Throws Error for a negative dimension, a null pointer with
/// elements, or kAvx2 on a CPU without AVX2 and FMA.
std::vector<HeadStats> attention_head_stats(const float* logits, const AttentionShape& shape,
                                            const uint8_t* visible = nullptr, Kernel kernel = Kernel::kAuto);

}  // namespace gradscope
