#include "gradscope/torch/compress/apply_recipe.h"

#include <torch/utils.h>

#include <ATen/ATen.h>

#include <map>

#include "gradscope/core/error.h"

namespace gradscope::compress {
namespace {

struct Target {
  const NodeDecision* decision = nullptr;
  at::Tensor weight, bias;  // bias undefined when the module has none
  int64_t units = 0, inputs = 0;
  at::Tensor mask;  // unstructured magnitude mask (baselines), undefined otherwise
};

std::string shape_text(at::IntArrayRef shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string module_path(const std::string& node) {
  std::string s = node;
  for (char& c : s)
    if (c == '/') c = '.';
  return s;
}

// Symmetric per-unit quantise-dequantise: scale = max|w_j| / qmax, q = round(w / scale)
// clamped to [-qmax, qmax] (qmax 127 or 7; -128 and -8 unused, so the grid is symmetric).
at::Tensor quantise(const at::Tensor& w, Precision p) {
  if (p == Precision::kFp32) return w;
  if (p == Precision::kFp16) return w.to(at::kHalf).to(w.scalar_type());
  const double qmax = p == Precision::kInt8 ? 127.0 : 7.0;
  const at::Tensor rows = w.reshape({w.size(0), -1});
  const at::Tensor scale = rows.abs().amax(at::IntArrayRef{1}, /*keepdim=*/true) / qmax;
  const at::Tensor safe = at::where(scale > 0, scale, at::ones_like(scale));  // all-zero unit stays 0
  return (rows / safe).round().clamp(-qmax, qmax).mul(safe).reshape(w.sizes());
}

std::map<std::string, std::pair<at::Tensor, at::Tensor>> weights_by_node(::torch::nn::Module& model) {
  std::map<std::string, std::pair<at::Tensor, at::Tensor>> out;
  for (const auto& item : model.named_modules("", /*include_self=*/false)) {
    const auto params = item.value()->named_parameters(false);  // find() points into it
    const auto* w = params.find("weight");
    if (!w) continue;
    const auto* b = params.find("bias");
    out[item.key()] = {*w, b ? *b : at::Tensor()};
  }
  return out;
}

}  // namespace

Applied apply(::torch::nn::Module& model, const Recipe& recipe) {
  const auto modules = weights_by_node(model);
  std::vector<Target> targets;
  std::string missing, differ;
  for (const NodeDecision& d : recipe.nodes) {
    auto it = modules.find(module_path(d.node));
    if (it == modules.end()) {
      missing += (missing.empty() ? "'" : ", '") + d.node + "'";
      continue;
    }
    Target t;
    t.decision = &d;
    t.weight = it->second.first;
    t.bias = it->second.second;
    const int64_t bias = t.bias.defined() ? t.bias.numel() : 0;
    if (t.weight.sizes().vec() != d.weight_shape || bias != d.bias) {
      differ += (differ.empty() ? "'" : ", '") + d.node + "' (recipe weight " + shape_text(d.weight_shape) + " bias " +
                std::to_string(d.bias) + ", model weight " + shape_text(t.weight.sizes()) + " bias " +
                std::to_string(bias) + ")";
      continue;
    }
    t.units = t.weight.size(0);
    t.inputs = t.weight.dim() < 2 ? 1 : t.weight.size(1);
    targets.push_back(t);
  }
  if (!missing.empty() || !differ.empty()) {
    std::string names;
    for (const auto& [name, unused] : modules) names += (names.empty() ? "" : ", ") + name;
    std::string msg = "recipe does not fit this model:";
    if (!missing.empty()) msg += " node(s) " + missing + " not in the model (its nodes: " + names + ");";
    if (!differ.empty()) msg += " shapes differ for " + differ + ";";
    msg.pop_back();
    throw Error(msg);
  }
  auto find = [&](const std::string& node) -> Target* {
    for (Target& t : targets)
      if (t.decision->node == node) return &t;
    return nullptr;
  };
  for (Target& t : targets) {
    const NodeDecision& d = *t.decision;
    std::vector<char> seen(static_cast<std::size_t>(t.units), 0);
    for (int64_t j : d.pruned_units) {
      if (j < 0 || j >= t.units)
        throw Error("recipe node '" + d.node + "': pruned unit " + std::to_string(j) + " is not in 0.." +
                    std::to_string(t.units - 1));
      if (seen[j]++) throw Error("recipe node '" + d.node + "': unit " + std::to_string(j) + " is pruned twice");
    }
    if (!d.pruned_units.empty()) {
      Target* next = find(d.next);
      if (!next || d.next_fan < 1 || d.next_fan * t.units != next->inputs)
        throw Error("recipe node '" + d.node + "': its pruned units have no matching inputs in next node '" + d.next + "'");
    }
    if (d.precision != Precision::kFp32 && !at::isfinite(t.weight).all().item<bool>())
      throw Error("recipe node '" + d.node + "': weight holds NaN or Inf; cannot quantise it");
  }

  ::torch::NoGradGuard no_grad;
  // Pruned units: zero their weights and bias, and the next node's inputs they fed. With the
  // inputs gone their activation no longer matters, so this equals removing them.
  for (Target& t : targets) {
    const NodeDecision& d = *t.decision;
    Target* next = d.pruned_units.empty() ? nullptr : find(d.next);
    for (int64_t j : d.pruned_units) {
      t.weight[j].zero_();
      if (t.bias.defined()) t.bias[j].zero_();
      next->weight.narrow(1, j * d.next_fan, d.next_fan).zero_();
    }
  }
  // Unstructured global magnitude pruning (baselines): the largest |w| over all nodes.
  if (recipe.magnitude_keep < 1.0) {
    std::vector<at::Tensor> flat;
    for (Target& t : targets) flat.push_back(t.weight.detach().abs().reshape({-1}));
    const at::Tensor all = at::cat(flat);
    const auto keep = static_cast<int64_t>(recipe.magnitude_keep * static_cast<double>(all.numel()));
    at::Tensor mask = at::zeros({all.numel()}, at::kBool);
    if (keep > 0) mask.index_fill_(0, std::get<1>(all.topk(keep)), true);
    int64_t offset = 0;
    for (Target& t : targets) {
      t.mask = mask.narrow(0, offset, t.weight.numel()).reshape(t.weight.sizes());
      offset += t.weight.numel();
      t.weight.mul_(t.mask.to(t.weight.scalar_type()));
    }
  }
  Applied out;
  for (Target& t : targets) {
    const NodeDecision& d = *t.decision;
    t.weight.copy_(quantise(t.weight, d.precision));
    if (t.bias.defined() && d.precision != Precision::kFp32) t.bias.copy_(t.bias.to(at::kHalf).to(t.bias.scalar_type()));
    AppliedNode n;
    n.node = d.node;
    n.precision = d.precision;
    const int64_t bias = t.bias.defined() ? t.bias.numel() : 0;
    const std::vector<int64_t> shape = t.weight.sizes().vec();
    if (t.mask.defined()) {
      n.kept_units = t.units;
      n.kept_weights = t.mask.sum().item<int64_t>();
      n.bytes = node_bytes(shape, bias, d.precision, t.units, t.inputs, t.weight.numel(), n.kept_weights);
    } else {
      n.kept_units = t.units - static_cast<int64_t>(d.pruned_units.size());
      const int64_t inputs = t.inputs - pruned_inputs(recipe.nodes, d.node);
      n.kept_weights = n.kept_units * inputs * (t.weight.numel() / (t.units * t.inputs));
      n.bytes = node_bytes(shape, bias, d.precision, n.kept_units, inputs);
    }
    out.bytes += n.bytes;
    out.fp32_bytes += node_bytes(shape, bias, Precision::kFp32, t.units, t.inputs);
    out.nodes.push_back(n);
  }
  return out;
}

}  // namespace gradscope::compress
