// Audit: element histograms at the steps AuditOptions::histogram_every samples. Each tensor is
// read once more there (the statistics pass does not bucket, so the steps that do not sample
// pay nothing), after one copy to a CPU float tensor when it is f16/bf16 or on another device.
#include <ATen/core/Tensor.h>

#include "audit/state.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {

ElementHistogram element_histogram(const at::Tensor& x, int64_t step, const std::string& node, Site site) {
  HistogramCounter counter;
  at::Tensor t = x.detach();
  if (t.is_sparse()) t = t.coalesce().values();  // the touched rows, as the statistics read them
  if (t.is_floating_point() && t.numel() > 0) {
    if (!t.is_cpu()) t = t.to(at::kCPU);
    if (t.scalar_type() != at::kFloat && t.scalar_type() != at::kDouble) t = t.to(at::kFloat);  // exact
    t = t.contiguous();
    const auto n = static_cast<std::size_t>(t.numel());
    if (t.scalar_type() == at::kFloat)
      counter.add(t.data_ptr<float>(), n);
    else
      counter.add(t.data_ptr<double>(), n);
  }
  return counter.take(step, node, site);
}

void Audit::State::add_histogram(ElementHistogram h) {
  for (ElementHistogram& e : current.histograms)
    if (e.step == h.step && e.site == h.site && e.node == h.node) return merge_into(e, h);
  current.histograms.push_back(std::move(h));
}

void Audit::State::param_grad_histogram(const Param& p, const at::Tensor& grad) {
  // A shard another rank counts still sends its node's histogram, empty: every rank's views
  // must have the same layout to meet in one allgather.
  const ElementHistogram h = p.counted ? element_histogram(grad, step, "", Site::kParamGrad)
                                        : HistogramCounter().take(step, "", Site::kParamGrad);
  const auto into = [&](int index) {
    auto [it, fresh] = pending_param_histograms.try_emplace(index);
    if (fresh) {
      it->second = h;
      it->second.node = entries[static_cast<std::size_t>(index)].id;
    } else {
      merge_into(it->second, h);
    }
  };
  into(p.node);
  if (p.sub >= 0 && entry_audited(entries[static_cast<std::size_t>(p.sub)])) into(p.sub);
}

void Audit::State::end_param_histograms() {
  for (auto& [index, h] : pending_param_histograms) add_histogram(std::move(h));
  pending_param_histograms.clear();
}

}  // namespace gradscope::torch
