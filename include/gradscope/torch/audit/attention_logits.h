// The pre-softmax logits of a multi-head attention call, computed from its inputs and its q and
// k projection weights: what the audit measures of nn.MultiheadAttention (Python) and
// torch::nn::MultiheadAttention (LibTorch) without changing the module.
//
//   gradscope::torch::ProjectedAttention a;
//   a.id = "encoder.attn"; a.query = q; a.key = k; a.wq = w_q; a.wk = w_k; a.heads = 8;
//   at::Tensor logits = gradscope::torch::projected_attention_logits(a);  // [N, heads, L, S]
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>

namespace gradscope::torch {

/// One call's inputs, in the module's conventions.
struct ProjectedAttention {
  std::string id;  ///< the node, for errors
  at::Tensor query, key;  ///< [L, N, E] and [S, N, E], or [N, L, E] and [N, S, E] when batch_first
  at::Tensor wq, bq, wk, bk;  ///< the q and k projections (biases may be undefined)
  int64_t heads = 1;
  bool batch_first = false;
  at::Tensor attn_mask;         ///< [L, S] or [N * heads, L, S]: bool true hides a key, or float added
  at::Tensor key_padding_mask;  ///< [N, S]: bool true hides a key, or float added
};

/// The logits, float [N, heads, L, S], hidden keys at -inf. Throws Error naming the node for
/// inputs that are not batched, heads that do not divide the projection, or a mask that does
/// not fit.
at::Tensor projected_attention_logits(const ProjectedAttention& attention);

}  // namespace gradscope::torch
