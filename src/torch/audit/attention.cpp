// Audit::record_attention: a node's pre-softmax logits into per-head statistics (core/attention)
// at the steps AuditOptions::attention_every samples.
#include <ATen/ATen.h>

#include <limits>

#include "audit/state.h"
#include "gradscope/core/attention/head_stats.h"
#include "gradscope/core/error.h"

namespace gradscope::torch {
namespace {

// The logits as a contiguous CPU float [batch, heads, queries, keys], hidden keys at -inf.
at::Tensor visible_logits(const std::string& id, const at::Tensor& logits, const at::Tensor& mask) {
  const std::string who = "audit: attention of node '" + id + "'";
  if (!logits.defined()) throw Error(who + ": undefined logits");
  if (logits.dim() != 3 && logits.dim() != 4)
    throw Error(who + ": logits must be [batch, heads, queries, keys] or [heads, queries, keys], got " +
                std::to_string(logits.dim()) + " dimensions");
  if (!at::isFloatingType(logits.scalar_type())) throw Error(who + ": logits must be floating point");
  at::Tensor l = logits.detach();
  if (l.dim() == 3) l = l.unsqueeze(0);
  l = l.to(at::kCPU, at::kFloat);
  if (mask.defined()) {
    try {
      const at::Tensor m = mask.detach().to(at::kCPU);
      if (m.scalar_type() == at::kBool) {
        l = l.masked_fill(m.logical_not(), -std::numeric_limits<float>::infinity());
      } else if (at::isFloatingType(m.scalar_type())) {
        l = l + m.to(at::kFloat);
      } else {
        throw Error(who + ": mask must be bool (true: may attend) or floating point (added to the logits)");
      }
    } catch (const c10::Error& e) {
      throw Error(who + ": mask of shape " + c10::str(mask.sizes()) + " does not broadcast to logits of shape " +
                  c10::str(logits.sizes()));
    }
    if (l.dim() != 4) throw Error(who + ": mask of shape " + c10::str(mask.sizes()) + " adds dimensions to the logits");
  }
  return l.contiguous();
}

}  // namespace

bool Audit::attention_step() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->attention_step();
}

void Audit::record_attention(const std::string& id, const at::Tensor& logits, const at::Tensor& mask) {
  State& s = *state_;
  const auto found = s.by_id.find(id);
  if (found == s.by_id.end()) throw Error("audit: attention: " + s.unknown_id_message(id));
  const int index = found->second;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.attention_step() || !s.entry_audited(s.entries[static_cast<std::size_t>(index)])) return;
  }
  if (!s.training_pass(index, /*consume=*/false)) return;
  const at::Tensor l = visible_logits(id, logits, mask);
  const AttentionShape shape{l.size(0), l.size(1), l.size(2), l.size(3)};
  std::vector<HeadStats> heads = attention_head_stats(l.data_ptr<float>(), shape);
  std::lock_guard<std::mutex> lock(s.mutex);
  for (AttentionRecord& r : s.current.attention) {
    if (r.node != id) continue;
    if (r.heads.size() != heads.size())
      throw Error("audit: attention of node '" + id + "': " + std::to_string(heads.size()) + " heads, earlier " +
                  std::to_string(r.heads.size()) + " in this step");
    for (std::size_t h = 0; h < heads.size(); ++h) r.heads[h] = merge(r.heads[h], heads[h]);
    return;
  }
  s.current.attention.push_back({s.step, id, std::move(heads)});
}

}  // namespace gradscope::torch
