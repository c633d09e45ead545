#include "gradscope/torch/compress/packed.h"

#include <torch/utils.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cstring>

#include "gradscope/core/compress/gptq.h"
#include "gradscope/core/error.h"

namespace gradscope::compress {
namespace {

struct DtypeName {
  at::ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {{at::kFloat, "F32"}, {at::kDouble, "F64"}, {at::kHalf, "F16"}, {at::kBFloat16, "BF16"},
                                 {at::kLong, "I64"},  {at::kInt, "I32"},    {at::kShort, "I16"}, {at::kChar, "I8"},
                                 {at::kByte, "U8"},   {at::kBool, "BOOL"}};

const char* stored_name(at::ScalarType t, const std::string& entry) {
  for (const DtypeName& d : kDtypes)
    if (d.type == t) return d.name;
  throw Error("compress: state entry '" + entry + "' has dtype " + std::string(c10::toString(t)) +
              ", which the packed file does not store");
}

at::ScalarType scalar_type(const std::string& name, const std::string& entry) {
  for (const DtypeName& d : kDtypes)
    if (name == d.name) return d.type;
  throw Error("compress: tensor '" + entry + "' has dtype " + name + ", which no LibTorch tensor holds");
}

std::string shape_text(at::IntArrayRef shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

bool is_node_weight(const Recipe& recipe, const std::string& name) {
  for (const NodeDecision& d : recipe.nodes)
    if (name == node_path(d.node) + ".weight") return true;
  return false;
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> model_state(::torch::nn::Module& model) {
  std::vector<std::pair<std::string, at::Tensor>> state;
  for (const auto& p : model.named_parameters(/*recurse=*/true)) state.emplace_back(p.key(), p.value());
  for (const auto& b : model.named_buffers(/*recurse=*/true)) state.emplace_back(b.key(), b.value());
  return state;
}

std::map<std::string, std::vector<uint8_t>> magnitude_masks(const std::vector<std::pair<std::string, at::Tensor>>& state,
                                                            const Recipe& recipe) {
  std::map<std::string, std::vector<uint8_t>> masks;
  if (recipe.magnitude_keep >= 1.0) return masks;
  ::torch::NoGradGuard no_grad;
  std::vector<at::Tensor> flat;
  std::vector<std::string> nodes;
  for (const NodeDecision& d : recipe.nodes) {
    for (const auto& [name, t] : state)
      if (name == node_path(d.node) + ".weight") {
        flat.push_back(t.detach().to(at::kFloat).abs().reshape({-1}));
        nodes.push_back(d.node);
      }
  }
  if (flat.empty()) return masks;
  // The largest |w| over all nodes, as many as the recipe keeps.
  const at::Tensor all = at::cat(flat);
  const auto keep = static_cast<int64_t>(recipe.magnitude_keep * static_cast<double>(all.numel()));
  at::Tensor mask = at::zeros({all.numel()}, at::kByte);
  if (keep > 0) mask.index_fill_(0, std::get<1>(all.topk(keep)), 1);
  int64_t offset = 0;
  for (std::size_t i = 0; i < flat.size(); ++i) {
    const at::Tensor part = mask.narrow(0, offset, flat[i].numel()).contiguous();
    offset += flat[i].numel();
    masks[nodes[i]].assign(part.data_ptr<uint8_t>(), part.data_ptr<uint8_t>() + part.numel());
  }
  return masks;
}

at::Tensor input_gram(const at::Tensor& rows) {
  if (!rows.defined() || rows.dim() != 2 || rows.size(0) < 1)
    throw Error("compress: input_gram needs [N, cols] rows, N >= 1, got " +
                (rows.defined() ? shape_text(rows.sizes()) : std::string("an undefined tensor")));
  const at::Tensor x = rows.detach().to(at::kCPU, at::kDouble);
  return x.t().mm(x);
}

PackedModel pack_state(const std::vector<std::pair<std::string, at::Tensor>>& state, const Recipe& recipe,
                       const InputGrams& grams, const RowRecipes& tables) {
  for (const auto& [node, g] : grams)
    if (std::none_of(recipe.nodes.begin(), recipe.nodes.end(), [&](const NodeDecision& d) { return d.node == node; }))
      throw Error("compress: a calibration Gram matrix is given for '" + node + "', which the recipe does not hold");
  std::vector<at::Tensor> held;  // contiguous CPU copies the entries point into
  std::vector<StateEntry> entries;
  for (const auto& [name, tensor] : state) {
    if (!tensor.defined()) throw Error("compress: state entry '" + name + "' is undefined");
    at::Tensor t = tensor.detach().to(at::kCPU);
    if (is_node_weight(recipe, name) || tables.count(name) ||
        (name.size() > 5 && name.compare(name.size() - 5, 5, ".bias") == 0 &&
         is_node_weight(recipe, name.substr(0, name.size() - 5) + ".weight")))
      t = t.to(at::kFloat);
    t = t.contiguous();
    held.push_back(t);
    entries.push_back({name, stored_name(t.scalar_type(), name), t.sizes().vec(), t.data_ptr()});
  }
  const auto masks = magnitude_masks(state, recipe);
  std::map<std::string, std::vector<float>> scales;
  for (const NodeDecision& d : recipe.nodes) {
    const auto g = grams.find(d.node);
    if (g == grams.end() || precision_bits(d.precision) > 8 || recipe.magnitude_keep < 1.0) continue;
    const std::string weight = node_path(d.node) + ".weight";
    auto entry = std::find_if(entries.begin(), entries.end(), [&](const StateEntry& e) { return e.name == weight; });
    if (entry == entries.end() || entry->shape != d.weight_shape) continue;  // pack() names what is wrong
    const int64_t units = d.weight_shape[0], inputs = d.weight_shape.size() < 2 ? 1 : d.weight_shape[1];
    int64_t per_input = 1;
    for (std::size_t k = 2; k < d.weight_shape.size(); ++k) per_input *= d.weight_shape[k];
    const int64_t cols = inputs * per_input;
    if (!g->second.defined() || g->second.dim() != 2 || g->second.size(0) != cols || g->second.size(1) != cols)
      throw Error("compress: the calibration Gram matrix of '" + d.node + "' is " +
                  (g->second.defined() ? shape_text(g->second.sizes()) : std::string("undefined")) + ", its weight needs [" +
                  std::to_string(cols) + ", " + std::to_string(cols) + "]");
    // The kept units and columns (inputs the previous node's pruning removed go with their kernel).
    std::vector<char> unit_gone(static_cast<std::size_t>(units), 0), col_gone(static_cast<std::size_t>(cols), 0);
    for (int64_t j : d.pruned_units) unit_gone[static_cast<std::size_t>(j)] = 1;
    for (const NodeDecision& prev : recipe.nodes)
      if (prev.next == d.node)
        for (int64_t j : prev.pruned_units)
          for (int64_t i = j * prev.next_fan; i < (j + 1) * prev.next_fan && i < inputs; ++i)
            for (int64_t k = 0; k < per_input; ++k) col_gone[static_cast<std::size_t>(i * per_input + k)] = 1;
    std::vector<int64_t> keep_units, keep_cols;
    for (int64_t j = 0; j < units; ++j)
      if (!unit_gone[static_cast<std::size_t>(j)]) keep_units.push_back(j);
    for (int64_t c = 0; c < cols; ++c)
      if (!col_gone[static_cast<std::size_t>(c)]) keep_cols.push_back(c);
    const at::Tensor ju = at::tensor(keep_units), jc = at::tensor(keep_cols);
    at::Tensor w = held[static_cast<std::size_t>(entry - entries.begin())].view({units, cols});
    at::Tensor sub = w.index_select(0, ju).index_select(1, jc).contiguous();
    const at::Tensor h = g->second.detach().to(at::kCPU, at::kDouble).index_select(0, jc).index_select(1, jc).contiguous();
    scales[d.node] = gptq_round(sub.data_ptr<float>(), sub.size(0), sub.size(1), h.data_ptr<double>(), quant_max(d.precision));
    // The rounded values into a copy of the weight the entry then points at.
    at::Tensor rounded = w.clone();
    rounded.index_put_({ju.unsqueeze(1), jc.unsqueeze(0)}, sub);
    held.push_back(rounded);
    entry->data = rounded.data_ptr();
  }
  return pack(recipe, entries, masks, scales, tables);
}

PackedFileSize save(::torch::nn::Module& model, const Recipe& recipe, const std::string& path, const InputGrams& grams,
                    const RowRecipes& tables) {
  return write_packed(path, pack_state(model_state(model), recipe, grams, tables));
}

PackedFileSize save_weights(::torch::nn::Module& model, const std::string& path) {
  return save(model, Recipe{}, path);
}

namespace {

std::vector<std::pair<std::string, at::Tensor>> tensors_of(std::vector<StoredTensor> stored) {
  std::vector<std::pair<std::string, at::Tensor>> state;
  for (StoredTensor& t : stored) {
    at::Tensor x = at::empty(t.shape, at::TensorOptions().dtype(scalar_type(t.dtype, t.name)));
    if (!t.data.empty()) std::memcpy(x.data_ptr(), t.data.data(), t.data.size());
    state.emplace_back(t.name, x);
  }
  return state;
}

}  // namespace

std::vector<std::pair<std::string, at::Tensor>> load_state(const std::string& path) {
  return tensors_of(unpack(read_packed(path)));
}

std::vector<EntryShape> entry_shapes(const std::vector<std::pair<std::string, at::Tensor>>& state) {
  std::vector<EntryShape> out;
  for (const auto& [name, t] : state) {
    const auto known = std::find_if(std::begin(kDtypes), std::end(kDtypes), [&](const DtypeName& d) { return d.type == t.scalar_type(); });
    out.push_back({name, known == std::end(kDtypes) ? "" : known->name, t.sizes().vec()});
  }
  return out;
}

std::vector<std::pair<std::string, at::Tensor>> load_state(const std::string& path, const std::vector<EntryShape>& model) {
  const PackedModel packed = read_packed(path);
  check_state_fits(model, check_packed(packed), "packed model '" + path + "'");
  return tensors_of(unpack(packed));
}

void load_state_into(::torch::nn::Module& model, const std::vector<std::pair<std::string, at::Tensor>>& state,
                     const std::string& source) {
  const auto targets = model_state(model);
  check_state_fits(entry_shapes(targets), entry_shapes(state), source);
  std::map<std::string, const at::Tensor*> by_name;
  for (const auto& [name, t] : state) by_name[name] = &t;
  ::torch::NoGradGuard no_grad;
  for (const auto& [name, target] : targets) target.copy_(*by_name.at(name));
}

void load(::torch::nn::Module& model, const std::string& path) {
  load_state_into(model, load_state(path, entry_shapes(model_state(model))), "packed model '" + path + "'");
}

}  // namespace gradscope::compress
