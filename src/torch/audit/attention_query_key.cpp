// Per-head attention statistics of a scaled_dot_product_attention call from its q and k, in
// blocks of queries so that the logits never take more than a block's bytes.
#include "gradscope/torch/audit/attention_query_key.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "gradscope/core/error.h"

namespace gradscope::torch {
namespace {

std::string shape_text(at::IntArrayRef sizes) { return c10::str(sizes); }

// [batch, heads, rows, dim]: a 3-dimensional tensor is one batch row.
at::Tensor batched(const at::Tensor& t) { return t.dim() == 3 ? t.unsqueeze(0) : t; }

}  // namespace

void check_query_key_attention(const QueryKeyAttention& a, const std::string& who) {
  if (!a.query.defined() || !a.key.defined()) throw Error(who + ": q and k must both be given");
  for (const auto& [name, t] : {std::pair<const char*, const at::Tensor&>{"q", a.query}, {"k", a.key}}) {
    if (t.dim() != 3 && t.dim() != 4)
      throw Error(who + ": " + name + " must be [batch, heads, tokens, dim] or [heads, tokens, dim], got shape " +
                  shape_text(t.sizes()));
    if (!at::isFloatingType(t.scalar_type()))
      throw Error(who + ": " + name + " must be floating point, got " + std::string(c10::toString(t.scalar_type())));
  }
  if (a.query.dim() != a.key.dim())
    throw Error(who + ": q of shape " + shape_text(a.query.sizes()) + " and k of shape " + shape_text(a.key.sizes()) +
                " must have the same number of dimensions");
  if (a.query.scalar_type() != a.key.scalar_type())
    throw Error(who + ": q is " + c10::toString(a.query.scalar_type()) + " and k is " +
                c10::toString(a.key.scalar_type()) + "; they must have one dtype");
  if (a.query.device() != a.key.device())
    throw Error(who + ": q is on " + a.query.device().str() + " and k on " + a.key.device().str() +
                "; they must be on one device");
  const at::Tensor q = batched(a.query), k = batched(a.key);
  const int64_t n = q.size(0), heads = q.size(1), queries = q.size(2), dim = q.size(3);
  const int64_t k_heads = k.size(1), keys = k.size(2);
  const std::string expected_k = "[" + std::to_string(n) + ", heads dividing " + std::to_string(heads) + ", keys, " +
                                 std::to_string(dim) + "]";
  if (k.size(0) != n || k.size(3) != dim || k_heads < 1 || heads % k_heads != 0)
    throw Error(who + ": k of shape " + shape_text(a.key.sizes()) + " does not fit q of shape " +
                shape_text(a.query.sizes()) + ": expected k " + expected_k +
                " (k heads must divide q heads: grouped-query attention)");
  if (a.scale && !std::isfinite(*a.scale)) throw Error(who + ": scale must be finite, got " + std::to_string(*a.scale));
  if (!a.mask.defined()) return;
  if (a.is_causal)
    throw Error(who + ": give a mask or is_causal, not both (as scaled_dot_product_attention)");
  if (a.mask.scalar_type() != at::kBool && !at::isFloatingType(a.mask.scalar_type()))
    throw Error(who + ": mask must be bool (true: may attend) or floating point (added to the logits), got " +
                c10::toString(a.mask.scalar_type()));
  if (a.mask.device() != a.query.device())
    throw Error(who + ": mask is on " + a.mask.device().str() + " and q on " + a.query.device().str());
  const std::vector<int64_t> logits{n, heads, queries, keys};
  bool fits = a.mask.dim() <= 4;
  for (int64_t i = 1; fits && i <= a.mask.dim(); ++i) {
    const int64_t m = a.mask.size(-i), l = logits[static_cast<std::size_t>(4 - i)];
    fits = m == l || m == 1;
  }
  if (!fits)
    throw Error(who + ": mask of shape " + shape_text(a.mask.sizes()) + " does not broadcast to the logits [" +
                std::to_string(n) + ", " + std::to_string(heads) + ", " + std::to_string(queries) + ", " +
                std::to_string(keys) + "] (batch, heads, queries, keys)");
}

std::vector<HeadStats> query_key_head_stats(const QueryKeyAttention& a, const std::string& who, int64_t block_bytes) {
  check_query_key_attention(a, who);
  at::NoGradGuard no_grad;
  // Under autocast (bf16 training) matmul would hand back bf16 logits: the statistics are of the
  // float32 logits of the call's q and k, whatever the region they are measured in.
  c10::impl::ExcludeDispatchKeyGuard no_autocast(c10::autocast_dispatch_keyset);
  const at::Tensor q = batched(a.query.detach()), k = batched(a.key.detach());
  const int64_t n = q.size(0), heads = q.size(1), queries = q.size(2), dim = q.size(3);
  const int64_t k_heads = k.size(1), keys = k.size(2), group = heads / k_heads;
  const double scale = a.scale.value_or(1.0 / std::sqrt(static_cast<double>(dim)));
  at::Tensor mask;
  if (a.mask.defined()) {
    mask = a.mask.detach();
    while (mask.dim() < 4) mask = mask.unsqueeze(0);
    mask = mask.expand({n, heads, queries, keys});  // a view: no memory
  }
  // A block: whole batch rows while one fits the bytes (few ATen calls for the many short
  // sequences of a small model), else query rows of one batch row (a long context).
  const int64_t row_bytes = heads * std::max<int64_t>(keys, 1) * static_cast<int64_t>(sizeof(float));
  const int64_t batch_bytes = row_bytes * std::max<int64_t>(queries, 1);
  const int64_t batch_rows = batch_bytes <= block_bytes ? std::clamp<int64_t>(block_bytes / batch_bytes, 1, n) : 1;
  const int64_t rows =
      batch_rows > 1 ? queries : std::clamp<int64_t>(block_bytes / row_bytes, 1, std::max<int64_t>(queries, 1));

  std::vector<HeadStats> out(static_cast<std::size_t>(heads));
  if (queries == 0 || keys == 0) return out;
  for (int64_t b = 0; b < n; b += batch_rows) {
    const int64_t nb = std::min(batch_rows, n - b);
    // [batch rows, k heads, dim, keys]: every block of these batch rows multiplies by it.
    const at::Tensor kt = k.narrow(0, b, nb).to(at::kFloat).transpose(-2, -1);
    for (int64_t first = 0; first < queries; first += rows) {
      const int64_t count = std::min(rows, queries - first);
      // q heads as [batch rows, k heads, group x rows, dim]: head h = g + group * kh reads k head kh.
      const at::Tensor qb =
          q.narrow(0, b, nb).narrow(2, first, count).to(at::kFloat).reshape({nb, k_heads, group * count, dim});
      at::Tensor logits = at::matmul(qb, kt).mul_(scale).view({nb, heads, count, keys});
      at::Tensor visible;
      if (mask.defined()) {
        const at::Tensor m = mask.narrow(0, b, nb).narrow(2, first, count);
        if (m.scalar_type() == at::kBool)
          logits.masked_fill_(m.logical_not(), -std::numeric_limits<float>::infinity());
        else
          logits.add_(m.to(at::kFloat));
      } else if (a.is_causal) {
        // Query first + r sees keys 0..first + r: shared by every batch row and head, read in place.
        visible = at::ones({count, keys}, at::kByte).tril(first).contiguous();
      }
      logits = logits.to(at::kCPU).contiguous();
      const std::vector<HeadStats> part =
          attention_head_stats(logits.data_ptr<float>(), AttentionShape{nb, heads, count, keys},
                               visible.defined() ? visible.data_ptr<uint8_t>() : nullptr);
      for (std::size_t h = 0; h < out.size(); ++h) out[h] = merge(out[h], part[h]);
    }
  }
  return out;
}

}  // namespace gradscope::torch
