// The attention of a scaled_dot_product_attention call from its q and k: SDPA never
// materialises the pre-softmax logits, so at the steps the audit measures attention they are
// computed here, one block of queries at a time, and summarised per head (core/attention); at
// other steps nothing is read. Grouped-query attention (fewer k heads than q heads) is handled
// as SDPA's enable_gqa does: q head h reads k head h / (q heads / k heads).
//
//   gradscope::torch::QueryKeyAttention a;
//   a.query = q; a.key = k; a.is_causal = true;          // q [B, H, L, E], k [B, Hkv, S, E]
//   audit.record_attention("blocks.0.attn", a);           // then F::scaled_dot_product_attention
//   std::vector<gradscope::HeadStats> h = gradscope::torch::query_key_head_stats(a, "attn");
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/attention/head_stats.h"

namespace gradscope::torch {

/// One call's q and k, in scaled_dot_product_attention's layout and conventions.
struct QueryKeyAttention {
  at::Tensor query;  ///< [batch, heads, queries, dim] or [heads, queries, dim]
  at::Tensor key;    ///< [batch, k heads, keys, dim] or [k heads, keys, dim]; k heads divides heads
  /// Optional, broadcasting to [batch, heads, queries, keys]: bool, true where a query may
  /// attend, or floating point, added to the logits (-inf hides a key). Not with is_causal.
  at::Tensor mask;
  bool is_causal = false;       ///< query i sees keys 0..i (aligned top-left, as SDPA)
  std::optional<double> scale;  ///< of q.k; 1 / sqrt(dim) when not given
};

/// Bytes of logits one block holds at most: whole batch rows (heads x queries x keys floats
/// each) while one fits, else query rows of one batch row; a single query row of every head of
/// one batch row is the floor when it alone is larger.
inline constexpr int64_t kQueryBlockBytes = int64_t{32} << 20;

/// Checks shapes, dtypes, devices and the mask against each other, reading no element; throws
/// Error beginning with `who` and naming the tensor and the shape expected.
void check_query_key_attention(const QueryKeyAttention& attention, const std::string& who);

/// One HeadStats per q head over every batch row and query, from the logits q.k * scale under
/// the mask, computed in blocks of at most `block_bytes` of logits (above) on the tensors'
/// device (the block's logits then reach the CPU kernel as float32). Checks as above first.
std::vector<HeadStats> query_key_head_stats(const QueryKeyAttention& attention, const std::string& who,
                                            int64_t block_bytes = kQueryBlockBytes);

}  // namespace gradscope::torch
