#include "gradscope/torch/compress/apply_recipe.h"

#include <torch/utils.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "gradscope/core/compress/packed.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/compress/packed.h"

namespace gradscope::compress {
namespace {

struct Target {
  const NodeDecision* decision = nullptr;
  at::Tensor weight, bias;  // bias undefined when the module has none
  int64_t units = 0, inputs = 0;
};

std::string shape_text(at::IntArrayRef shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
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

Applied apply(::torch::nn::Module& model, const Recipe& recipe, const InputGrams& grams) {
  const auto modules = weights_by_node(model);
  std::vector<Target> targets;
  std::string missing, differ;
  for (const NodeDecision& d : recipe.nodes) {
    auto it = modules.find(node_path(d.node));
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

  // One implementation of what is stored: pack the nodes as the file would hold them and
  // write back what a loader reconstructs (core/compress/packed.h), so applied == loaded.
  std::vector<std::pair<std::string, at::Tensor>> state;
  for (const Target& t : targets) {
    state.emplace_back(node_path(t.decision->node) + ".weight", t.weight);
    if (t.bias.defined()) state.emplace_back(node_path(t.decision->node) + ".bias", t.bias);
  }
  const PackedModel packed = pack_state(state, recipe, grams);
  std::map<std::string, at::Tensor> dense;
  for (StoredTensor& t : unpack(packed)) {
    at::Tensor x = at::empty(t.shape, at::kFloat);
    std::memcpy(x.data_ptr<float>(), t.data.data(), t.data.size());
    dense[t.name] = x;
  }
  ::torch::NoGradGuard no_grad;
  Applied out;
  for (std::size_t i = 0; i < targets.size(); ++i) {
    Target& t = targets[i];
    const NodeDecision& d = *t.decision;
    const std::string path = node_path(d.node);
    t.weight.copy_(dense.at(path + ".weight"));
    if (t.bias.defined()) t.bias.copy_(dense.at(path + ".bias"));
    AppliedNode n;
    n.node = d.node;
    n.precision = d.precision;
    n.bytes = packed.nodes[i].bytes;
    const int64_t bias = t.bias.defined() ? t.bias.numel() : 0;
    const std::vector<int64_t> shape = t.weight.sizes().vec();
    if (packed.nodes[i].bitmap) {  // the weights its bitmap keeps
      n.kept_units = t.units;
      const auto mask = std::find_if(packed.tensors.begin(), packed.tensors.end(),
                                     [&](const StoredTensor& x) { return x.name == path + ".weight.mask"; });
      n.kept_weights = 0;
      for (uint8_t byte : mask->data) n.kept_weights += __builtin_popcount(byte);
    } else {
      n.kept_units = t.units - static_cast<int64_t>(d.pruned_units.size());
      const int64_t inputs = t.inputs - pruned_inputs(recipe.nodes, d.node);
      n.kept_weights = n.kept_units * inputs * (t.weight.numel() / (t.units * t.inputs));
    }
    out.bytes += n.bytes;
    out.fp32_bytes += node_bytes(shape, bias, Precision::kFp32, t.units, t.inputs);
    out.nodes.push_back(n);
  }
  return out;
}

}  // namespace gradscope::compress
