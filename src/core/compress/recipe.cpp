#include "gradscope/core/compress/recipe.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "gradscope/core/error.h"

namespace gradscope::compress {
namespace {

int64_t product(const std::vector<int64_t>& shape, std::size_t from) {
  int64_t n = 1;
  for (std::size_t i = from; i < shape.size(); ++i) n *= shape[i];
  return n;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

NodeDecision decision_of(const NodeProfile& p) {
  NodeDecision d;
  d.node = p.node;
  d.weight_shape = p.weight_shape;
  d.bias = p.bias;
  d.next = p.next;
  d.next_fan = p.next_fan;
  return d;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

int precision_bits(Precision p) {
  switch (p) {
    case Precision::kFp32: return 32;
    case Precision::kFp16: return 16;
    case Precision::kInt8: return 8;
    case Precision::kInt4: return 4;
    case Precision::kInt3: return 3;
    case Precision::kInt2: return 2;
  }
  return 32;
}

int quant_max(Precision p) {
  const int bits = precision_bits(p);
  return bits <= 8 ? (1 << (bits - 1)) - 1 : 0;
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kFp16: return "fp16";
    case Precision::kInt8: return "int8";
    case Precision::kInt4: return "int4";
    case Precision::kInt3: return "int3";
    case Precision::kInt2: return "int2";
  }
  return "fp32";
}

Precision parse_precision(const std::string& name) {
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kInt8, Precision::kInt4, Precision::kInt3,
                      Precision::kInt2})
    if (name == precision_name(p)) return p;
  throw Error("unknown precision '" + name + "' (expected fp32, fp16, int8, int4, int3 or int2)");
}

int64_t NodeProfile::unit_elements() const { return weight_shape.size() < 2 ? 1 : product(weight_shape, 1); }
int64_t NodeProfile::input_elements() const { return product(weight_shape, 2); }

int64_t node_bytes(const std::vector<int64_t>& weight_shape, int64_t bias, Precision p, int64_t kept_units,
                   int64_t kept_inputs, int64_t bitmap_weights, int64_t kept_weights) {
  const int64_t per_input = product(weight_shape, 2);
  const int64_t weights = bitmap_weights > 0 ? kept_weights : kept_units * kept_inputs * per_input;
  const int bits = precision_bits(p);
  int64_t bytes = ceil_div(weights * bits, 8);
  if (bits <= 8) bytes += 4 * kept_units;  // one FP32 scale per kept unit
  if (bias > 0) bytes += kept_units * (bits == 32 ? 4 : 2);
  if (bitmap_weights > 0) bytes += ceil_div(bitmap_weights, 8);
  return bytes;
}

int64_t pruned_inputs(const std::vector<NodeDecision>& nodes, const std::string& node) {
  int64_t n = 0;
  for (const NodeDecision& d : nodes)
    if (d.next == node) n += static_cast<int64_t>(d.pruned_units.size()) * d.next_fan;
  return n;
}

void recompute_bytes(Recipe& recipe) {
  recipe.bytes = 0;
  recipe.fp32_bytes = 0;
  for (NodeDecision& d : recipe.nodes) {
    const int64_t units = d.weight_shape.empty() ? 0 : d.weight_shape[0];
    const int64_t inputs = d.weight_shape.size() < 2 ? 1 : d.weight_shape[1];
    const int64_t kept_units = units - static_cast<int64_t>(d.pruned_units.size());
    const int64_t kept_inputs = inputs - pruned_inputs(recipe.nodes, d.node);
    if (recipe.magnitude_keep < 1.0) {
      // Planned: each node keeps the global fraction (apply() reports what it really kept).
      const int64_t n = product(d.weight_shape, 0);
      const auto kept = static_cast<int64_t>(std::floor(recipe.magnitude_keep * static_cast<double>(n)));
      d.bytes = node_bytes(d.weight_shape, d.bias, d.precision, units, inputs, n, kept);
    } else {
      d.bytes = node_bytes(d.weight_shape, d.bias, d.precision, kept_units, kept_inputs);
    }
    recipe.bytes += d.bytes;
    recipe.fp32_bytes += node_bytes(d.weight_shape, d.bias, Precision::kFp32, units, inputs);
  }
}

Recipe fp32_recipe(const std::vector<NodeProfile>& profiles) {
  check_profiles(profiles);
  Recipe r;
  r.method = "fp32";
  for (const NodeProfile& p : profiles) r.nodes.push_back(decision_of(p));
  recompute_bytes(r);
  return r;
}

Recipe uniform_recipe(const std::vector<NodeProfile>& profiles, Precision p) {
  Recipe r = fp32_recipe(profiles);
  r.method = std::string("uniform-") + precision_name(p);
  for (NodeDecision& d : r.nodes) {
    d.precision = p;
    d.premise = "uniform baseline";
    d.action = std::string("every weight ") + precision_name(p) + ", nothing pruned";
  }
  recompute_bytes(r);
  for (NodeDecision& d : r.nodes) d.expected_effect = std::to_string(d.bytes) + " bytes";
  return r;
}

Recipe magnitude_recipe(const std::vector<NodeProfile>& profiles, Precision p, int64_t budget_bytes) {
  if (p != Precision::kFp32 && p != Precision::kInt8)
    throw Error(std::string("magnitude pruning baseline: precision ") + precision_name(p) +
                " is not supported (fp32 or int8)");
  Recipe r = fp32_recipe(profiles);
  r.method = p == Precision::kFp32 ? "magnitude" : "magnitude-int8";
  r.budget_bytes = budget_bytes;
  int64_t fixed = 0, weights = 0;
  for (NodeDecision& d : r.nodes) {
    d.precision = p;
    const int64_t n = product(d.weight_shape, 0);
    weights += n;
    // Everything but the kept weights, plus one byte per node for rounding up.
    fixed += node_bytes(d.weight_shape, d.bias, p, d.weight_shape[0], 0, n, 0) + 1;
  }
  const int bits = precision_bits(p);
  const int64_t kept = (budget_bytes - fixed) * 8 / bits;
  if (kept < 1)
    throw Error("magnitude pruning baseline: budget " + std::to_string(budget_bytes) +
                " bytes cannot be met: scales, biases and bitmaps alone take " + std::to_string(fixed) + " bytes");
  r.magnitude_keep = std::min(1.0, static_cast<double>(kept) / static_cast<double>(weights));
  if (r.magnitude_keep >= 1.0) r.magnitude_keep = 0.999999;  // still a bitmap: the baseline as defined
  recompute_bytes(r);
  for (NodeDecision& d : r.nodes) {
    d.premise = "global magnitude pruning baseline";
    d.action = std::string(precision_name(p)) + ", keep the largest |w| of all nodes (" +
               std::to_string(r.magnitude_keep) + " of the weights), bitmap";
  }
  return r;
}

void check_profiles(const std::vector<NodeProfile>& profiles) {
  std::set<std::string> seen;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    const NodeProfile& p = profiles[i];
    const std::string where = "node '" + p.node + "': ";
    if (p.node.empty()) throw Error("compression profile: node " + std::to_string(i) + " has no name");
    if (!seen.insert(p.node).second) throw Error(where + "appears twice");
    if (p.weight_shape.empty()) throw Error(where + "has no weight shape");
    for (int64_t d : p.weight_shape)
      if (d < 1) throw Error(where + "weight shape " + shape_text(p.weight_shape) + " has a dimension < 1");
    if (p.bias != 0 && p.bias != p.units())
      throw Error(where + "bias of " + std::to_string(p.bias) + " elements for " + std::to_string(p.units()) +
                  " units");
    for (const std::vector<double>* v : {&p.act_sq, &p.out_grad_sq, &p.zero_frac, &p.max_abs, &p.weight_sq})
      if (!v->empty() && static_cast<int64_t>(v->size()) != p.units())
        throw Error(where + "a per-unit statistic has " + std::to_string(v->size()) + " values for " +
                    std::to_string(p.units()) + " units");
    for (const std::vector<double>* v : {&p.act_sq, &p.out_grad_sq, &p.zero_frac, &p.max_abs, &p.weight_sq})
      for (double x : *v)
        if (!std::isfinite(x) || x < 0) throw Error(where + "a per-unit statistic is negative or not finite");
    if (!p.next.empty()) {
      auto it = std::find_if(profiles.begin() + static_cast<std::ptrdiff_t>(i) + 1, profiles.end(),
                             [&](const NodeProfile& q) { return q.node == p.next; });
      if (it == profiles.end()) throw Error(where + "next node '" + p.next + "' is not a later node");
      const int64_t inputs = it->weight_shape.size() < 2 ? 1 : it->weight_shape[1];
      if (p.next_fan < 1 || p.next_fan * p.units() != inputs)
        throw Error(where + std::to_string(p.units()) + " units x fan " + std::to_string(p.next_fan) +
                    " do not match the " + std::to_string(inputs) + " inputs of '" + p.next + "'");
    }
  }
}

}  // namespace gradscope::compress
