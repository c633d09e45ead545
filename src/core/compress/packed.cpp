#include "gradscope/core/compress/packed.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "gradscope/core/error.h"
#include "gradscope/core/stats/half.h"
#include "internal/packed_layout.h"

namespace gradscope::compress {
namespace {

using internal::code_of;
using internal::product;
using internal::shape_text;

template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const std::size_t at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}

// Values of `bits` bits (at most 32), least significant bit first, one after another across
// bytes: codes, row levels and merged rows' indices all take this layout.
class BitWriter {
 public:
  explicit BitWriter(int bits) : bits_(bits) {}
  void add(uint32_t v) {
    bytes_.resize(static_cast<std::size_t>((at_ + bits_ + 7) / 8), 0);
    uint64_t x = static_cast<uint64_t>(v) << (at_ % 8);
    for (auto k = static_cast<std::size_t>(at_ / 8); x != 0; ++k, x >>= 8) bytes_[k] = static_cast<uint8_t>(bytes_[k] | x);
    at_ += bits_;
  }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  int bits_;
  int64_t at_ = 0;
  std::vector<uint8_t> bytes_;
};

struct NodeParts {
  const StateEntry* weight = nullptr;
  const StateEntry* bias = nullptr;
};

const StateEntry* find_entry(const std::vector<StateEntry>& state, const std::string& name) {
  for (const StateEntry& e : state)
    if (e.name == name) return &e;
  return nullptr;
}

std::vector<uint8_t> bitmap_of(const std::vector<uint8_t>& mask) {
  std::vector<uint8_t> bits((mask.size() + 7) / 8, 0);
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) bits[i / 8] = static_cast<uint8_t>(bits[i / 8] | (1u << (i % 8)));
  return bits;
}

// One table's tensors from its F32 [rows, dim] values and its row recipe (PackedTable's layout).
PackedTable pack_table(const std::string& name, const float* x, const RowRecipe& r, std::vector<StoredTensor>& out) {
  PackedTable t;
  t.name = name;
  t.rows = r.rows;
  t.dim = r.dim;
  bool present[kRowLevels] = {};
  for (uint8_t l : r.level) {
    if (l >= kRowLevels) throw Error("pack: table '" + name + "': row level " + std::to_string(l) + " is not one");
    present[l] = true;
  }
  for (int l = 0; l < kRowLevels; ++l)
    if (present[l]) t.levels.push_back(static_cast<uint8_t>(l));
  // What unpack refuses is not written: a table with no stored row, a fallback not finite.
  if (t.levels.empty() || t.levels[0] >= kRowPruned)
    throw Error("pack: table '" + name + "': every row is pruned or merged");
  if (present[kRowPruned])
    for (double v : r.fallback)
      if (!std::isfinite(static_cast<float>(v))) throw Error("pack: table '" + name + "': its fallback row holds NaN or Inf");
  const int64_t dim = r.dim;
  std::vector<uint32_t> codes, merged;
  std::vector<uint8_t> fp32, fp16;
  std::map<int, std::pair<std::vector<uint8_t>, std::vector<uint8_t>>> ints;  // bits -> codes, scales
  std::vector<int32_t> q(static_cast<std::size_t>(dim));
  for (int64_t i = 0; i < r.rows; ++i) {
    const uint8_t l = r.level[static_cast<std::size_t>(i)];
    codes.push_back(static_cast<uint32_t>(std::find(t.levels.begin(), t.levels.end(), l) - t.levels.begin()));
    const float* row = x + i * dim;
    if (const int bits = row_level_int_bits(l)) {
      for (int64_t k = 0; k < dim; ++k)
        if (!std::isfinite(row[k])) throw Error("pack: table '" + name + "': row " + std::to_string(i) + " holds NaN or Inf");
      const float scale = quantise_unit(row, dim, (1 << (bits - 1)) - 1, q.data());
      if (!internal::scale_fits(scale, (1 << (bits - 1)) - 1))
        throw Error("pack: table '" + name + "': row " + std::to_string(i) + " is near the float range's end; cannot quantise it");
      BitWriter w(bits);
      for (int32_t c : q) w.add(code_of(c, bits));
      std::vector<uint8_t> b = w.take();  // each row from a byte boundary
      auto& [buf, scales] = ints[bits];
      buf.insert(buf.end(), b.begin(), b.end());
      put(scales, scale);
    } else if (l == kRowFp32) {
      for (int64_t k = 0; k < dim; ++k) put(fp32, row[k]);
    } else if (l == kRowFp16) {
      for (int64_t k = 0; k < dim; ++k) put(fp16, float_to_half(row[k]));
    } else if (l == kRowMerged) {
      const int64_t m = r.merged_into.empty() ? -1 : r.merged_into[static_cast<std::size_t>(i)];
      if (m < 0 || m >= r.rows || r.level[static_cast<std::size_t>(m)] >= kRowPruned)
        throw Error("pack: table '" + name + "': merged row " + std::to_string(i) + " shares row " + std::to_string(m) +
                    ", which is not a stored row");
      merged.push_back(static_cast<uint32_t>(m));
    }
  }
  const std::size_t before = out.size();
  auto add = [&](const std::string& part, const char* dtype, std::vector<uint8_t> data) {
    const int64_t count = static_cast<int64_t>(data.size()) / stored_dtype_size(dtype);
    if (!data.empty()) out.push_back({name + ".rows." + part, dtype, {count}, std::move(data)});
  };
  if (t.levels.size() > 1) {
    BitWriter w(row_code_bits(static_cast<int>(t.levels.size())));
    for (uint32_t c : codes) w.add(c);
    std::vector<uint8_t> c = w.take();
    add("codes", "U8", std::move(c));
  }
  add("fp32", "F32", std::move(fp32));
  add("fp16", "F16", std::move(fp16));
  for (auto& [bits, parts] : ints) {
    const std::string level = "int" + std::to_string(bits);
    add(level + ".codes", "U8", std::move(parts.first));
    add(level + ".scales", "F32", std::move(parts.second));
  }
  if (present[kRowPruned]) {
    std::vector<uint8_t> f;
    for (double v : r.fallback) put(f, static_cast<float>(v));
    add("fallback", "F32", std::move(f));
  }
  if (!merged.empty()) {
    BitWriter w(static_cast<int>(row_index_bits(r.rows)));
    for (uint32_t m : merged) w.add(m);
    std::vector<uint8_t> m = w.take();
    add("merged", "U8", std::move(m));
  }
  for (std::size_t k = before; k < out.size(); ++k) t.bytes += static_cast<int64_t>(out[k].data.size());
  return t;
}

}  // namespace

bool loads_into(const std::string& file, const std::string& model) {
  auto floating = [](const std::string& d) { return d == "F64" || d == "F32" || d == "F16" || d == "BF16"; };
  return file.empty() || model.empty() || file == model || (floating(file) && floating(model));
}

void check_state_fits(const std::vector<EntryShape>& model, const std::vector<EntryShape>& file,
                      const std::string& source) {
  std::map<std::string, const EntryShape*> in_model, in_file;
  for (const EntryShape& e : model) in_model[e.name] = &e;
  for (const EntryShape& e : file) in_file[e.name] = &e;
  std::string missing, extra, differ, dtypes;
  auto add = [](std::string& list, const std::string& item) { list += (list.empty() ? "'" : ", '") + item; };
  for (const EntryShape& e : model)
    if (!in_file.count(e.name)) add(missing, e.name + "'");
  for (const EntryShape& e : file) {
    const auto m = in_model.find(e.name);
    if (m == in_model.end()) add(extra, e.name + "'");
    else if (m->second->shape != e.shape)
      add(differ, e.name + "' (file " + shape_text(e.shape) + ", model " + shape_text(m->second->shape) + ")");
    else if (!loads_into(e.dtype, m->second->dtype))
      add(dtypes, e.name + "' (file " + e.dtype + ", model " + m->second->dtype + ")");
  }
  if (missing.empty() && extra.empty() && differ.empty() && dtypes.empty()) return;
  std::string msg = source + " does not fit this model:";
  if (!missing.empty()) msg += " the model's " + missing + " not in it;";
  if (!extra.empty()) msg += " " + extra + " not in the model;";
  if (!differ.empty()) msg += " shapes differ for " + differ + ";";
  if (!dtypes.empty()) msg += " dtypes cannot load for " + dtypes + ";";
  msg.pop_back();
  throw Error(msg);
}

std::string node_path(const std::string& node) {
  std::string s = node;
  std::replace(s.begin(), s.end(), '/', '.');
  return s;
}

int64_t stored_dtype_size(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64" || dtype == "U64") return 8;
  if (dtype == "F32" || dtype == "I32" || dtype == "U32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16" || dtype == "U16") return 2;
  if (dtype == "I8" || dtype == "U8" || dtype == "BOOL") return 1;
  throw Error("unknown tensor dtype '" + dtype + "' (safetensors names: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)");
}

float quantise_unit(const float* w, int64_t n, int qmax, int32_t* q) {
  float max_abs = 0;
  for (int64_t i = 0; i < n; ++i) max_abs = std::max(max_abs, std::fabs(w[i]));
  const float scale = max_abs / static_cast<float>(qmax);
  const float fq = static_cast<float>(qmax);
  for (int64_t i = 0; i < n; ++i)
    q[i] = scale > 0 ? static_cast<int32_t>(std::clamp(std::nearbyint(w[i] / scale), -fq, fq)) : 0;
  return scale;
}

PackedModel pack(const Recipe& recipe, const std::vector<StateEntry>& state,
                 const std::map<std::string, std::vector<uint8_t>>& keep_masks,
                 const std::map<std::string, std::vector<float>>& unit_scales,
                 const std::map<std::string, RowRecipe>& row_recipes) {
  PackedModel out;
  std::set<std::string> used;
  std::string problems;
  auto problem = [&](const std::string& s) { problems += (problems.empty() ? "" : "; ") + s; };
  std::set<std::string> names;
  for (const StateEntry& e : state) {
    if (!names.insert(e.name).second) throw Error("pack: state entry '" + e.name + "' appears twice");
    const int64_t n = product(e.shape);
    if (n > 0 && !e.data) throw Error("pack: state entry '" + e.name + "' has no data");
    stored_dtype_size(e.dtype);
  }
  // The manifest's nodes and their entries, checked before anything is packed.
  std::vector<NodeParts> parts;
  for (const NodeDecision& d : recipe.nodes) {
    PackedNode n;
    n.node = node_path(d.node);
    n.precision = d.precision;
    n.weight_shape = d.weight_shape;
    n.has_bias = d.bias > 0;
    n.pruned_units = d.pruned_units;
    std::sort(n.pruned_units.begin(), n.pruned_units.end());
    NodeParts np;
    np.weight = find_entry(state, n.node + ".weight");
    np.bias = n.has_bias ? find_entry(state, n.node + ".bias") : nullptr;
    if (!np.weight) problem("node '" + d.node + "': no state entry '" + n.node + ".weight'");
    else if (np.weight->dtype != "F32" || np.weight->shape != d.weight_shape)
      problem("node '" + d.node + "': weight is " + np.weight->dtype + " " + shape_text(np.weight->shape) +
              ", the recipe's F32 " + shape_text(d.weight_shape));
    if (n.has_bias && !np.bias) problem("node '" + d.node + "': no state entry '" + n.node + ".bias'");
    else if (np.bias && (np.bias->dtype != "F32" || product(np.bias->shape) != d.bias))
      problem("node '" + d.node + "': bias is " + np.bias->dtype + " " + shape_text(np.bias->shape) + ", the recipe's F32 of " +
              std::to_string(d.bias));
    if (!n.has_bias && find_entry(state, n.node + ".bias"))
      problem("node '" + d.node + "': the recipe has no bias, the state has '" + n.node + ".bias'");
    const int64_t units = d.weight_shape.empty() ? 0 : d.weight_shape[0];
    for (std::size_t i = 0; i < n.pruned_units.size(); ++i) {
      if (n.pruned_units[i] < 0 || n.pruned_units[i] >= units)
        throw Error("pack: node '" + d.node + "': pruned unit " + std::to_string(n.pruned_units[i]) + " is not in 0.." +
                    std::to_string(units - 1));
      if (i > 0 && n.pruned_units[i] == n.pruned_units[i - 1])
        throw Error("pack: node '" + d.node + "': unit " + std::to_string(n.pruned_units[i]) + " is pruned twice");
    }
    if (units > 0 && static_cast<int64_t>(n.pruned_units.size()) >= units)
      throw Error("pack: node '" + d.node + "': prunes every unit");
    n.bitmap = recipe.magnitude_keep < 1.0;
    if (const auto sc = unit_scales.find(d.node); sc != unit_scales.end()) {
      const int64_t kept_units = units - static_cast<int64_t>(n.pruned_units.size());
      if (precision_bits(d.precision) > 8 || static_cast<int64_t>(sc->second.size()) != kept_units)
        problem("node '" + d.node + "': " + std::to_string(sc->second.size()) + " scales given for " +
                std::to_string(kept_units) + " kept units at " + precision_name(d.precision));
      for (float x : sc->second)
        if (!internal::scale_fits(x, quant_max(d.precision)))
          problem("node '" + d.node + "': a given scale is negative, not finite, or Inf at the grid's top level");
    }
    if (n.bitmap) {
      const auto m = keep_masks.find(d.node);
      if (m == keep_masks.end() || static_cast<int64_t>(m->second.size()) != product(d.weight_shape))
        problem("node '" + d.node + "': unstructured pruning needs its keep mask of " +
                std::to_string(product(d.weight_shape)) + " weights");
    }
    used.insert(n.node + ".weight");
    if (n.has_bias) used.insert(n.node + ".bias");
    out.nodes.push_back(n);
    parts.push_back(np);
  }
  if (!problems.empty()) throw Error("pack: the recipe does not fit the model: " + problems);
  for (std::size_t a = 0; a < recipe.nodes.size(); ++a) {
    const NodeDecision& d = recipe.nodes[a];
    if (d.pruned_units.empty()) continue;
    auto next = std::find_if(out.nodes.begin(), out.nodes.end(), [&](const PackedNode& n) { return n.node == node_path(d.next); });
    const int64_t inputs = next == out.nodes.end() || next->weight_shape.size() < 2 ? 0 : next->weight_shape[1];
    if (next == out.nodes.end() || d.next_fan < 1 || d.next_fan * d.weight_shape[0] != inputs)
      throw Error("pack: node '" + d.node + "': its pruned units have no matching inputs in next node '" + d.next + "'");
    for (int64_t j : out.nodes[a].pruned_units)
      for (int64_t i = 0; i < d.next_fan; ++i) next->pruned_inputs.push_back(j * d.next_fan + i);
  }
  for (PackedNode& n : out.nodes) {
    std::sort(n.pruned_inputs.begin(), n.pruned_inputs.end());
    // What unpack refuses (two nodes' units removing one input, or every input) is not written.
    const auto twice = std::adjacent_find(n.pruned_inputs.begin(), n.pruned_inputs.end());
    if (twice != n.pruned_inputs.end())
      throw Error("pack: node '" + n.node + "': input " + std::to_string(*twice) + " is pruned twice (by two nodes' units)");
    if (!n.pruned_inputs.empty() && static_cast<int64_t>(n.pruned_inputs.size()) >= n.weight_shape[1])
      throw Error("pack: node '" + n.node + "': its inputs are all pruned");
  }

  for (std::size_t a = 0; a < out.nodes.size(); ++a) {
    PackedNode& n = out.nodes[a];
    const NodeDecision& d = recipe.nodes[a];
    const float* w = static_cast<const float*>(parts[a].weight->data);
    const std::vector<uint8_t>* mask = n.bitmap ? &keep_masks.at(d.node) : nullptr;
    const std::vector<uint8_t> bitmap = mask ? bitmap_of(*mask) : std::vector<uint8_t>();
    auto for_kept = [&](auto visit) {
      internal::for_kept(n.weight_shape, n.pruned_units, n.pruned_inputs, mask ? &bitmap : nullptr, visit);
    };
    const int64_t kept_units = n.weight_shape[0] - static_cast<int64_t>(n.pruned_units.size());
    const int bits = precision_bits(n.precision);
    const int64_t before = static_cast<int64_t>(out.tensors.size());
    if (bits <= 8) {
      // Gather each kept unit's kept weights, quantise them together (one scale per unit).
      std::vector<std::vector<float>> units(static_cast<std::size_t>(kept_units));
      for_kept([&](int64_t u, int64_t flat) { units[static_cast<std::size_t>(u)].push_back(w[flat]); });
      BitWriter codes(bits);
      std::vector<uint8_t> scales;
      std::vector<int32_t> q;
      const auto given = unit_scales.find(d.node);
      const float fq = static_cast<float>(quant_max(n.precision));
      for (std::size_t u = 0; u < units.size(); ++u) {
        const std::vector<float>& unit = units[u];
        for (float x : unit)
          if (!std::isfinite(x)) throw Error("pack: node '" + d.node + "': weight holds NaN or Inf; cannot quantise it");
        q.resize(unit.size());
        if (given == unit_scales.end()) {
          const float scale = quantise_unit(unit.data(), static_cast<int64_t>(unit.size()), quant_max(n.precision), q.data());
          if (!internal::scale_fits(scale, quant_max(n.precision)))
            throw Error("pack: node '" + d.node + "': weights near the float range's end; cannot quantise them");
          put(scales, scale);
        } else {  // the scales of another rounding (gptq.h): each weight to the nearest level of its grid
          const float scale = given->second[u];
          for (std::size_t i = 0; i < unit.size(); ++i)
            q[i] = scale > 0 ? static_cast<int32_t>(std::clamp(std::nearbyint(unit[i] / scale), -fq, fq)) : 0;
          put(scales, scale);
        }
        for (int32_t c : q) codes.add(code_of(c, bits));
      }
      std::vector<uint8_t> packed = codes.take();
      out.tensors.push_back({n.node + ".weight.codes", "U8", {static_cast<int64_t>(packed.size())}, std::move(packed)});
      out.tensors.push_back({n.node + ".weight.scales", "F32", {kept_units}, std::move(scales)});
    } else {
      std::vector<uint8_t> values;
      int64_t count = 0;
      for_kept([&](int64_t, int64_t flat) {
        if (bits == 16) put(values, float_to_half(w[flat]));
        else put(values, w[flat]);
        ++count;
      });
      out.tensors.push_back({n.node + ".weight", bits == 16 ? "F16" : "F32", {count}, std::move(values)});
    }
    if (mask) out.tensors.push_back({n.node + ".weight.mask", "U8", {static_cast<int64_t>(bitmap.size())}, bitmap});
    if (n.has_bias) {
      const float* b = static_cast<const float*>(parts[a].bias->data);
      std::vector<uint8_t> values;
      std::vector<char> gone(static_cast<std::size_t>(n.weight_shape[0]), 0);
      for (int64_t j : n.pruned_units) gone[static_cast<std::size_t>(j)] = 1;
      for (int64_t j = 0; j < n.weight_shape[0]; ++j) {
        if (gone[static_cast<std::size_t>(j)]) continue;
        if (bits == 32) put(values, b[j]);
        else put(values, float_to_half(b[j]));
      }
      out.tensors.push_back({n.node + ".bias", bits == 32 ? "F32" : "F16", {kept_units}, std::move(values)});
    }
    for (auto t = out.tensors.begin() + before; t != out.tensors.end(); ++t) n.bytes += static_cast<int64_t>(t->data.size());
    out.node_bytes += n.bytes;
  }
  for (const auto& [name, r] : row_recipes) {
    const StateEntry* e = find_entry(state, name);
    if (!e) throw Error("pack: no state entry '" + name + "' for its row recipe (table '" + r.table + "')");
    if (used.count(name)) throw Error("pack: state entry '" + name + "' is both a node's and a table's");
    if (e->dtype != "F32" || e->shape != std::vector<int64_t>{r.rows, r.dim} ||
        static_cast<int64_t>(r.level.size()) != r.rows || static_cast<int64_t>(r.fallback.size()) != r.dim)
      throw Error("pack: table '" + name + "' is " + e->dtype + " " + shape_text(e->shape) + ", its row recipe is for F32 [" +
                  std::to_string(r.rows) + ", " + std::to_string(r.dim) + "] (with a level per row and a fallback of dim values)");
    out.tables.push_back(pack_table(name, static_cast<const float*>(e->data), r, out.tensors));
    out.table_bytes += out.tables.back().bytes;
    used.insert(name);
  }
  for (const StateEntry& e : state) {
    if (used.count(e.name)) continue;
    StoredTensor t{e.name, e.dtype, e.shape, {}};
    t.data.resize(static_cast<std::size_t>(product(e.shape) * stored_dtype_size(e.dtype)));
    if (!t.data.empty()) std::memcpy(t.data.data(), e.data, t.data.size());
    out.other_bytes += static_cast<int64_t>(t.data.size());
    out.tensors.push_back(std::move(t));
  }
  return out;
}

}  // namespace gradscope::compress
