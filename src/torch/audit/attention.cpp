// Audit::record_attention: a node's pre-softmax logits into per-head statistics (core/attention)
// at the steps AuditOptions::attention_every samples.
#include <ATen/ATen.h>
#include <torch/nn/modules/activation.h>

#include <cmath>
#include <limits>

#include "audit/state.h"
#include "gradscope/core/attention/head_stats.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/audit/attention_logits.h"

namespace gradscope::torch {
namespace {

// The logits as a contiguous CPU float [batch, heads, queries, keys] (the caller's tensor when
// it already is one), hidden keys at -inf or, for a bool mask of the queries and keys alone (a
// causal mask), in `visible` ([queries, keys] bytes): read in place, not applied to a copy.
struct Prepared {
  at::Tensor logits, visible;
};

Prepared prepare(const std::string& id, const at::Tensor& logits, const at::Tensor& mask) {
  const std::string who = "audit: attention of node '" + id + "'";
  if (!logits.defined()) throw Error(who + ": undefined logits");
  if (logits.dim() != 3 && logits.dim() != 4)
    throw Error(who + ": logits must be [batch, heads, queries, keys] or [heads, queries, keys], got " +
                std::to_string(logits.dim()) + " dimensions");
  if (!at::isFloatingType(logits.scalar_type())) throw Error(who + ": logits must be floating point");
  Prepared p;
  at::Tensor l = logits.detach();
  if (l.dim() == 3) l = l.unsqueeze(0);
  l = l.to(at::kCPU, at::kFloat);
  if (mask.defined()) {
    const at::Tensor m = mask.detach().to(at::kCPU);
    if (m.scalar_type() != at::kBool && !at::isFloatingType(m.scalar_type()))
      throw Error(who + ": mask must be bool (true: may attend) or floating point (added to the logits)");
    const auto broadcast_error = [&] {
      return Error(who + ": mask of shape " + c10::str(mask.sizes()) + " does not broadcast to logits of shape " +
                   c10::str(logits.sizes()));
    };
    at::Tensor shared = m;  // [.., queries, keys] with every leading dimension 1
    while (shared.dim() > 2 && shared.size(0) == 1) shared = shared.squeeze(0);
    if (m.scalar_type() == at::kBool && shared.dim() == 2) {
      try {
        p.visible = shared.expand({l.size(2), l.size(3)}).to(at::kByte).contiguous();
      } catch (const c10::Error&) {
        throw broadcast_error();
      }
    } else {
      try {
        l = m.scalar_type() == at::kBool
                ? l.masked_fill(m.logical_not(), -std::numeric_limits<float>::infinity())
                : l + m.to(at::kFloat);
      } catch (const c10::Error&) {
        throw broadcast_error();
      }
      if (l.dim() != 4) throw Error(who + ": mask of shape " + c10::str(mask.sizes()) + " adds dimensions to the logits");
    }
  }
  p.logits = l.contiguous();
  return p;
}

// The entry of node `id` when its attention is measured now (a sampled step, the node audited,
// a training pass), else -1: checked before any logits are read or projected. Throws Error for
// an unknown id.
int attention_entry(Audit::State& s, const std::string& id) {
  const auto found = s.by_id.find(id);
  if (found == s.by_id.end()) throw Error("audit: attention: " + s.unknown_id_message(id));
  const int index = found->second;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.attention_step() || !s.entry_audited(s.entries[static_cast<std::size_t>(index)])) return -1;
  }
  return s.training_pass(index, /*consume=*/false) ? index : -1;
}

}  // namespace

at::Tensor projected_attention_logits(const ProjectedAttention& a) {
  const std::string who = "audit: attention of node '" + a.id + "'";
  if (!a.query.defined() || !a.key.defined() || a.query.dim() != 3 || a.key.dim() != 3)
    throw Error(who + ": query and key must be 3-dimensional (batched)");
  if (a.heads < 1 || a.wq.dim() != 2 || a.wq.size(0) % a.heads != 0)
    throw Error(who + ": the q projection's rows must divide into " + std::to_string(a.heads) + " heads");
  // [N, L, E]
  const at::Tensor q_in = a.batch_first ? a.query : a.query.transpose(0, 1);
  const at::Tensor k_in = a.batch_first ? a.key : a.key.transpose(0, 1);
  const int64_t n = q_in.size(0), lq = q_in.size(1), lk = k_in.size(1), hd = a.wq.size(0) / a.heads;
  at::NoGradGuard no_grad;
  const at::Tensor q = at::linear(q_in, a.wq, a.bq).view({n, lq, a.heads, hd}).transpose(1, 2).to(at::kFloat);
  const at::Tensor k = at::linear(k_in, a.wk, a.bk).view({n, lk, a.heads, hd}).transpose(1, 2).to(at::kFloat);
  at::Tensor logits = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(static_cast<double>(hd));
  const auto hide = [&](const at::Tensor& m, at::IntArrayRef shape) {
    try {
      const at::Tensor v = m.view(shape);
      logits = v.scalar_type() == at::kBool ? logits.masked_fill(v, -std::numeric_limits<float>::infinity())
                                            : logits + v.to(at::kFloat);
    } catch (const c10::Error&) {
      throw Error(who + ": mask of shape " + c10::str(m.sizes()) + " does not fit logits [" + std::to_string(n) + ", " +
                  std::to_string(a.heads) + ", " + std::to_string(lq) + ", " + std::to_string(lk) + "]");
    }
  };
  if (a.attn_mask.defined())
    hide(a.attn_mask, a.attn_mask.dim() == 3 ? at::IntArrayRef{n, a.heads, lq, lk} : at::IntArrayRef{1, 1, lq, lk});
  if (a.key_padding_mask.defined()) hide(a.key_padding_mask, {n, 1, 1, lk});
  return logits;
}

void Audit::record_attention(const std::string& id, const ::torch::nn::MultiheadAttentionImpl& m, const at::Tensor& query,
                             const at::Tensor& key, const at::Tensor& attn_mask, const at::Tensor& key_padding_mask) {
  if (m.bias_k.defined() || m.options.add_zero_attn())
    throw Error("audit: attention of node '" + id + "': add_bias_kv and add_zero_attn append keys the audit does not reproduce");
  // LibTorch 1.13's module adds attn_mask to the weights whatever its type: a bool mask adds
  // 0 or 1 and hides nothing (measured: tests/torch/audit_attention_test.cpp). Measuring it as
  // a mask would describe attention the module does not compute.
  if (attn_mask.defined() && attn_mask.scalar_type() == at::kBool)
    throw Error("audit: attention of node '" + id + "': LibTorch's MultiheadAttention adds attn_mask to its logits, so a "
                "bool mask hides no key there; pass a float mask (-inf where a key is hidden) to both");
  const int64_t e = m.options.embed_dim();
  ProjectedAttention a;
  a.id = id;
  a.query = query;
  a.key = key;
  a.wq = m._qkv_same_embed_dim ? m.in_proj_weight.narrow(0, 0, e) : m.q_proj_weight;
  a.wk = m._qkv_same_embed_dim ? m.in_proj_weight.narrow(0, e, e) : m.k_proj_weight;
  if (m.in_proj_bias.defined()) {
    a.bq = m.in_proj_bias.narrow(0, 0, e);
    a.bk = m.in_proj_bias.narrow(0, e, e);
  }
  a.heads = m.options.num_heads();
  a.batch_first = false;  // LibTorch's module takes [L, N, E]
  a.attn_mask = attn_mask;
  a.key_padding_mask = key_padding_mask;
  record_attention(a);
}

void Audit::record_attention(const ProjectedAttention& call) {
  if (attention_entry(*state_, call.id) < 0) return;  // before the projection, not after it
  add_attention(call.id, projected_attention_logits(call), {});
}

bool Audit::attention_step() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->attention_step();
}

void Audit::record_attention(const std::string& id, const at::Tensor& logits, const at::Tensor& mask) {
  if (attention_entry(*state_, id) < 0) return;
  add_attention(id, logits, mask);
}

void Audit::add_attention(const std::string& id, const at::Tensor& logits, const at::Tensor& mask) {
  const Prepared p = prepare(id, logits, mask);
  const at::Tensor& l = p.logits;
  const AttentionShape shape{l.size(0), l.size(1), l.size(2), l.size(3)};
  add_head_stats(id, attention_head_stats(l.data_ptr<float>(), shape,
                                          p.visible.defined() ? p.visible.data_ptr<uint8_t>() : nullptr));
}

void Audit::record_attention(const std::string& id, const QueryKeyAttention& call) {
  const std::string who = "audit: attention of node '" + id + "'";
  check_query_key_attention(call, who);  // at every call: a mistake shows at the first step
  if (attention_entry(*state_, id) < 0) return;
  add_head_stats(id, query_key_head_stats(call, who));
}

void Audit::add_head_stats(const std::string& id, std::vector<HeadStats> heads) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  for (AttentionRecord& r : s.current.attention) {
    if (r.node != id) continue;
    if (r.heads.size() != heads.size())
      throw Error("audit: attention of node '" + id + "': " + std::to_string(heads.size()) + " heads, earlier " +
                  std::to_string(r.heads.size()) + " in this step");
    for (std::size_t h = 0; h < heads.size(); ++h) r.heads[h] = merge(r.heads[h], heads[h]);
    return;
  }
  const auto [first, fresh] = s.attention_heads.try_emplace(id, heads.size(), s.step);
  if (!fresh && first->second.first != heads.size())
    throw Error("audit: attention of node '" + id + "': " + std::to_string(heads.size()) + " heads at step " +
                std::to_string(s.step) + ", earlier " + std::to_string(first->second.first) + " (from step " +
                std::to_string(first->second.second) + "); a node's head count is fixed for the run: record "
                "attention of another head count on a node of its own");
  s.current.attention.push_back({s.step, id, std::move(heads)});
}

}  // namespace gradscope::torch
