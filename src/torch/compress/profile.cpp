// profile_model: what the compression rule reads, from a trained model and its audit.
#include <torch/utils.h>

#include <ATen/ATen.h>

#include "gradscope/core/compress/packed.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/compress/apply_recipe.h"

namespace gradscope::compress {

std::vector<NodeProfile> profile_model(::torch::nn::Module& model, const torch::Audit& audit, int64_t batch,
                                       const ProfileOptions& options) {
  return profile_model(model, audit.node_ids(), audit.records(), audit.channel_records(), batch, options);
}

std::vector<NodeProfile> profile_model(::torch::nn::Module& model, const std::vector<std::string>& node_ids,
                                       const std::vector<Record>& records, const std::vector<ChannelRecord>& channels,
                                       int64_t batch, const ProfileOptions& options) {
  if (batch < 1) throw Error("compression profile: batch " + std::to_string(batch) + " is < 1");
  std::vector<NodeProfile> out;
  std::vector<at::Tensor> weights;
  for (const std::string& id : node_ids) {
    const std::string path = node_path(id);
    std::shared_ptr<::torch::nn::Module> module;
    for (const auto& item : model.named_modules("", false))
      if (item.key() == path) module = item.value();
    if (!module) continue;
    const auto params = module->named_parameters(false);  // find() points into it
    const auto* w = params.find("weight");
    if (!w || w->dim() < 2) continue;
    const auto* b = params.find("bias");
    NodeProfile p;
    p.node = id;
    p.weight_shape = w->sizes().vec();
    p.bias = b ? b->numel() : 0;
    p.batch = batch;
    ::torch::NoGradGuard no_grad;
    const at::Tensor rows = w->detach().to(at::kDouble).reshape({w->size(0), -1});
    const at::Tensor amax = rows.abs().amax(at::IntArrayRef{1}).contiguous(), sq = rows.pow(2).sum(at::IntArrayRef{1}).contiguous();
    p.max_abs.assign(amax.data_ptr<double>(), amax.data_ptr<double>() + amax.numel());
    p.weight_sq.assign(sq.data_ptr<double>(), sq.data_ptr<double>() + sq.numel());
    out.push_back(std::move(p));
    weights.push_back(*w);
  }
  if (out.empty()) throw Error("compression profile: no audited node has a weight with 2 or more dimensions");

  // Channel views: per-unit energy of the output and of its gradient, and how often it is 0.
  for (NodeProfile& p : out) {
    std::vector<Stats> act(static_cast<std::size_t>(p.units())), grad(act.size());
    int64_t samples = 0;
    bool any = false, have_grad = true;
    for (const ChannelRecord& c : channels) {
      if (c.node != p.node || static_cast<int64_t>(c.activation.size()) != p.units()) continue;
      any = true;
      for (std::size_t j = 0; j < act.size(); ++j) act[j] = merge(act[j], c.activation[j]);
      if (c.output_grad.size() == act.size())
        for (std::size_t j = 0; j < act.size(); ++j) grad[j] = merge(grad[j], c.output_grad[j]);
      else
        have_grad = false;
      samples += batch;
    }
    if (!any) continue;
    p.positions = std::max<int64_t>(1, act[0].count / samples);
    for (std::size_t j = 0; j < act.size(); ++j) {
      p.act_sq.push_back(act[j].finite ? act[j].sum_sq / static_cast<double>(act[j].finite) : 0.0);
      p.zero_frac.push_back(act[j].frac_zero());
      if (have_grad) p.out_grad_sq.push_back(grad[j].finite ? grad[j].sum_sq / static_cast<double>(grad[j].finite) : 0.0);
    }
  }
  if (options.chain)
    for (std::size_t i = 0; i + 1 < out.size(); ++i) {
      const int64_t inputs = out[i + 1].weight_shape[1];
      if (inputs % out[i].units() == 0) {
        out[i].next = out[i + 1].node;
        out[i].next_fan = inputs / out[i].units();
      }
    }
  add_run_dynamics(out, records);
  return out;
}

}  // namespace gradscope::compress
