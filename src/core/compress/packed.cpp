#include "gradscope/core/compress/packed.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "gradscope/core/error.h"
#include "gradscope/core/stats/half.h"

namespace gradscope::compress {
namespace {

int64_t product(const std::vector<int64_t>& shape, std::size_t from = 0) {
  int64_t n = 1;
  for (std::size_t i = from; i < shape.size(); ++i) n *= shape[i];
  return n;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

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

// The value of `bits` bits that starts at bit `at` (it spans at most 5 bytes, all present).
uint32_t read_bits_at(const std::vector<uint8_t>& bytes, int bits, int64_t at) {
  const auto first = static_cast<std::size_t>(at / 8);
  const int shift = static_cast<int>(at % 8);
  uint64_t word = 0;
  for (int k = 0; k * 8 < shift + bits; ++k) word |= static_cast<uint64_t>(bytes[first + k]) << (8 * k);
  return static_cast<uint32_t>((word >> shift) & ((uint64_t{1} << bits) - 1));
}

// A weight's integer q stored as the code q + 2^(bits-1): -qmax..qmax are 1..2^bits - 1.
uint32_t code_of(int32_t q, int bits) { return static_cast<uint32_t>(q + (1 << (bits - 1))); }
int32_t q_of(uint32_t code, int bits) { return static_cast<int32_t>(code) - (1 << (bits - 1)); }

struct NodeParts {
  const StateEntry* weight = nullptr;
  const StateEntry* bias = nullptr;
};

const StateEntry* find_entry(const std::vector<StateEntry>& state, const std::string& name) {
  for (const StateEntry& e : state)
    if (e.name == name) return &e;
  return nullptr;
}

// The kept elements of a node's weight, unit by unit: units not pruned, input indices not
// pruned, and with a bitmap only the weights it keeps. `visit(unit_position, flat_index)`.
template <class Visit>
void for_kept(const PackedNode& n, const std::vector<uint8_t>* mask, Visit visit) {
  const int64_t units = n.weight_shape[0];
  const int64_t inputs = n.weight_shape.size() < 2 ? 1 : n.weight_shape[1];
  const int64_t per_input = product(n.weight_shape, 2);
  std::vector<char> unit_gone(static_cast<std::size_t>(units), 0), input_gone(static_cast<std::size_t>(inputs), 0);
  for (int64_t j : n.pruned_units) unit_gone[static_cast<std::size_t>(j)] = 1;
  for (int64_t i : n.pruned_inputs) input_gone[static_cast<std::size_t>(i)] = 1;
  int64_t kept_unit = 0;
  for (int64_t j = 0; j < units; ++j) {
    if (unit_gone[static_cast<std::size_t>(j)]) continue;
    for (int64_t i = 0; i < inputs; ++i) {
      if (input_gone[static_cast<std::size_t>(i)]) continue;
      for (int64_t k = 0; k < per_input; ++k) {
        const int64_t flat = (j * inputs + i) * per_input + k;
        if (!mask || (*mask)[static_cast<std::size_t>(flat)]) visit(kept_unit, flat);
      }
    }
    ++kept_unit;
  }
}

std::vector<uint8_t> bitmap_of(const std::vector<uint8_t>& mask) {
  std::vector<uint8_t> bits((mask.size() + 7) / 8, 0);
  for (std::size_t i = 0; i < mask.size(); ++i)
    if (mask[i]) bits[i / 8] = static_cast<uint8_t>(bits[i / 8] | (1u << (i % 8)));
  return bits;
}

std::vector<uint8_t> mask_of(const std::vector<uint8_t>& bitmap, int64_t n) {
  std::vector<uint8_t> mask(static_cast<std::size_t>(n));
  for (int64_t i = 0; i < n; ++i) mask[static_cast<std::size_t>(i)] = (bitmap[static_cast<std::size_t>(i / 8)] >> (i % 8)) & 1u;
  return mask;
}

const StoredTensor& part(const PackedModel& p, const std::string& name, int64_t bytes) {
  for (const StoredTensor& t : p.tensors)
    if (t.name == name) {
      if (static_cast<int64_t>(t.data.size()) != bytes)
        throw Error("packed model: tensor '" + name + "' holds " + std::to_string(t.data.size()) + " bytes, its node needs " +
                    std::to_string(bytes));
      return t;
    }
  throw Error("packed model: tensor '" + name + "' is missing");
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

// A table's F32 values back from its tensors; `used` collects their names.
StoredTensor unpack_table(const PackedModel& p, const PackedTable& t, std::set<std::string>& used) {
  const std::string where = "packed model: table '" + t.name + "'";
  if (t.rows < 1 || t.dim < 1 || t.levels.empty()) throw Error(where + " has no rows, dim or levels");
  for (uint8_t l : t.levels)
    if (l >= kRowLevels) throw Error(where + ": level " + std::to_string(l) + " is not one");
  auto find = [&](const std::string& part) -> const StoredTensor* {
    for (const StoredTensor& x : p.tensors)
      if (x.name == t.name + ".rows." + part) {
        used.insert(x.name);
        return &x;
      }
    return nullptr;
  };
  const int bits = row_code_bits(static_cast<int>(t.levels.size()));
  const StoredTensor* codes = bits > 0 ? find("codes") : nullptr;
  if (bits > 0 && (!codes || static_cast<int64_t>(codes->data.size()) != (t.rows * bits + 7) / 8))
    throw Error(where + ": its row codes are missing or of the wrong size");
  std::vector<uint8_t> level(static_cast<std::size_t>(t.rows));
  for (int64_t i = 0; i < t.rows; ++i) {
    const uint32_t c = bits > 0 ? read_bits_at(codes->data, bits, i * bits) : 0;
    if (c >= t.levels.size()) throw Error(where + ": row " + std::to_string(i) + " has no level " + std::to_string(c));
    level[static_cast<std::size_t>(i)] = t.levels[c];
  }
  int64_t count[kRowLevels] = {};
  for (uint8_t l : level) ++count[l];
  const int64_t dim = t.dim;
  auto need = [&](const std::string& part, int64_t bytes) -> const std::vector<uint8_t>* {
    if (bytes == 0) return nullptr;
    const StoredTensor* x = find(part);
    if (!x || static_cast<int64_t>(x->data.size()) != bytes)
      throw Error(where + ": tensor '" + t.name + ".rows." + part + "' is missing or not " + std::to_string(bytes) + " bytes");
    return &x->data;
  };
  const auto* fp32 = need("fp32", count[kRowFp32] * dim * 4);
  const auto* fp16 = need("fp16", count[kRowFp16] * dim * 2);
  const std::vector<uint8_t>* int_codes[kRowLevels] = {};
  const std::vector<uint8_t>* int_scales[kRowLevels] = {};
  for (uint8_t l = 0; l < kRowLevels; ++l)
    if (const int bits = row_level_int_bits(l)) {
      const std::string level = "int" + std::to_string(bits);
      int_codes[l] = need(level + ".codes", count[l] * ((dim * bits + 7) / 8));
      int_scales[l] = need(level + ".scales", count[l] * 4);
    }
  const auto* fallback = need("fallback", count[kRowPruned] > 0 ? dim * 4 : 0);
  const int64_t index_bits = row_index_bits(t.rows);
  const auto* merged = need("merged", (count[kRowMerged] * index_bits + 7) / 8);
  StoredTensor out{t.name, "F32", {t.rows, dim}, std::vector<uint8_t>(static_cast<std::size_t>(t.rows * dim * 4))};
  float* v = reinterpret_cast<float*>(out.data.data());
  int64_t at[kRowLevels] = {};
  std::vector<std::pair<int64_t, int64_t>> shares;  // merged row, its representative
  for (int64_t i = 0; i < t.rows; ++i) {
    const uint8_t l = level[static_cast<std::size_t>(i)];
    float* row = v + i * dim;
    const int64_t k = at[l]++;
    if (const int bits = row_level_int_bits(l)) {
      const int64_t row_bytes = (dim * bits + 7) / 8;
      float scale;
      std::memcpy(&scale, int_scales[l]->data() + k * 4, 4);
      for (int64_t j = 0; j < dim; ++j)  // each row's codes start at a byte boundary
        row[j] = static_cast<float>(q_of(read_bits_at(*int_codes[l], bits, k * row_bytes * 8 + j * bits), bits)) * scale;
      continue;
    }
    switch (l) {
      case kRowFp32: std::memcpy(row, fp32->data() + k * dim * 4, static_cast<std::size_t>(dim * 4)); break;
      case kRowFp16:
        for (int64_t j = 0; j < dim; ++j) {
          uint16_t h;
          std::memcpy(&h, fp16->data() + (k * dim + j) * 2, 2);
          row[j] = half_to_float(h);
        }
        break;
      case kRowPruned: std::memcpy(row, fallback->data(), static_cast<std::size_t>(dim * 4)); break;
      default: {
        const auto m = static_cast<int64_t>(read_bits_at(*merged, static_cast<int>(index_bits), k * index_bits));
        if (m >= t.rows || level[static_cast<std::size_t>(m)] >= kRowPruned)
          throw Error(where + ": merged row " + std::to_string(i) + " shares row " + std::to_string(m) + ", not a stored row");
        shares.emplace_back(i, m);
      }
    }
  }
  for (const auto& [i, m] : shares) std::memcpy(v + i * dim, v + m * dim, static_cast<std::size_t>(dim * 4));
  return out;
}

}  // namespace

void check_state_fits(const std::vector<EntryShape>& model, const std::vector<EntryShape>& file,
                      const std::string& source) {
  std::map<std::string, const std::vector<int64_t>*> in_model, in_file;
  for (const auto& [name, shape] : model) in_model[name] = &shape;
  for (const auto& [name, shape] : file) in_file[name] = &shape;
  std::string missing, extra, differ;
  auto add = [](std::string& list, const std::string& item) { list += (list.empty() ? "'" : ", '") + item; };
  for (const auto& [name, shape] : model)
    if (!in_file.count(name)) add(missing, name + "'");
  for (const auto& [name, shape] : file) {
    const auto m = in_model.find(name);
    if (m == in_model.end()) add(extra, name + "'");
    else if (*m->second != shape)
      add(differ, name + "' (file " + shape_text(shape) + ", model " + shape_text(*m->second) + ")");
  }
  if (missing.empty() && extra.empty() && differ.empty()) return;
  std::string msg = source + " does not fit this model:";
  if (!missing.empty()) msg += " the model's " + missing + " not in it;";
  if (!extra.empty()) msg += " " + extra + " not in the model;";
  if (!differ.empty()) msg += " shapes differ for " + differ + ";";
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
    n.bitmap = recipe.magnitude_keep < 1.0;
    if (const auto sc = unit_scales.find(d.node); sc != unit_scales.end()) {
      const int64_t kept_units = units - static_cast<int64_t>(n.pruned_units.size());
      if (precision_bits(d.precision) > 8 || static_cast<int64_t>(sc->second.size()) != kept_units)
        problem("node '" + d.node + "': " + std::to_string(sc->second.size()) + " scales given for " +
                std::to_string(kept_units) + " kept units at " + precision_name(d.precision));
      for (float x : sc->second)
        if (!(x >= 0) || !std::isfinite(x)) problem("node '" + d.node + "': a given scale is negative or not finite");
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
  for (PackedNode& n : out.nodes) std::sort(n.pruned_inputs.begin(), n.pruned_inputs.end());

  for (std::size_t a = 0; a < out.nodes.size(); ++a) {
    PackedNode& n = out.nodes[a];
    const NodeDecision& d = recipe.nodes[a];
    const float* w = static_cast<const float*>(parts[a].weight->data);
    const std::vector<uint8_t>* mask = n.bitmap ? &keep_masks.at(d.node) : nullptr;
    const int64_t kept_units = n.weight_shape[0] - static_cast<int64_t>(n.pruned_units.size());
    const int bits = precision_bits(n.precision);
    const int64_t before = static_cast<int64_t>(out.tensors.size());
    if (bits <= 8) {
      // Gather each kept unit's kept weights, quantise them together (one scale per unit).
      std::vector<std::vector<float>> units(static_cast<std::size_t>(kept_units));
      for_kept(n, mask, [&](int64_t u, int64_t flat) { units[static_cast<std::size_t>(u)].push_back(w[flat]); });
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
          put(scales, quantise_unit(unit.data(), static_cast<int64_t>(unit.size()), quant_max(n.precision), q.data()));
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
      for_kept(n, mask, [&](int64_t, int64_t flat) {
        if (bits == 16) put(values, float_to_half(w[flat]));
        else put(values, w[flat]);
        ++count;
      });
      out.tensors.push_back({n.node + ".weight", bits == 16 ? "F16" : "F32", {count}, std::move(values)});
    }
    if (mask) out.tensors.push_back({n.node + ".weight.mask", "U8", {(product(n.weight_shape) + 7) / 8}, bitmap_of(*mask)});
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

std::vector<StoredTensor> unpack(const PackedModel& packed) {
  std::vector<StoredTensor> out;
  std::set<std::string> node_parts;
  for (const PackedNode& n : packed.nodes) {
    if (n.weight_shape.empty() || product(n.weight_shape) < 1)
      throw Error("packed model: node '" + n.node + "' has no weight shape");
    const int64_t units = n.weight_shape[0];
    const int64_t inputs = n.weight_shape.size() < 2 ? 1 : n.weight_shape[1];
    for (int64_t j : n.pruned_units)
      if (j < 0 || j >= units) throw Error("packed model: node '" + n.node + "': pruned unit " + std::to_string(j) + " out of range");
    for (int64_t i : n.pruned_inputs)
      if (i < 0 || i >= inputs) throw Error("packed model: node '" + n.node + "': pruned input " + std::to_string(i) + " out of range");
    const int64_t numel = product(n.weight_shape);
    const int64_t kept_units = units - static_cast<int64_t>(n.pruned_units.size());
    std::vector<uint8_t> mask;
    if (n.bitmap) {
      mask = mask_of(part(packed, n.node + ".weight.mask", (numel + 7) / 8).data, numel);
      node_parts.insert(n.node + ".weight.mask");
    }
    int64_t kept = 0;
    for_kept(n, n.bitmap ? &mask : nullptr, [&](int64_t, int64_t) { ++kept; });
    std::vector<float> w(static_cast<std::size_t>(numel), 0.0f);
    const int bits = precision_bits(n.precision);
    if (bits <= 8) {
      const StoredTensor& codes = part(packed, n.node + ".weight.codes", (kept * bits + 7) / 8);
      const StoredTensor& scales = part(packed, n.node + ".weight.scales", 4 * kept_units);
      node_parts.insert(codes.name);
      node_parts.insert(scales.name);
      int64_t index = 0;
      for_kept(n, n.bitmap ? &mask : nullptr, [&](int64_t u, int64_t flat) {
        float scale;
        std::memcpy(&scale, scales.data.data() + 4 * u, 4);
        w[static_cast<std::size_t>(flat)] = static_cast<float>(q_of(read_bits_at(codes.data, bits, index++ * bits), bits)) * scale;
      });
    } else {
      const StoredTensor& values = part(packed, n.node + ".weight", kept * bits / 8);
      node_parts.insert(values.name);
      int64_t index = 0;
      for_kept(n, n.bitmap ? &mask : nullptr, [&](int64_t, int64_t flat) {
        float x;
        if (bits == 16) {
          uint16_t h;
          std::memcpy(&h, values.data.data() + 2 * index, 2);
          x = half_to_float(h);
        } else {
          std::memcpy(&x, values.data.data() + 4 * index, 4);
        }
        w[static_cast<std::size_t>(flat)] = x;
        ++index;
      });
    }
    StoredTensor weight{n.node + ".weight", "F32", n.weight_shape, std::vector<uint8_t>(static_cast<std::size_t>(numel) * 4)};
    std::memcpy(weight.data.data(), w.data(), weight.data.size());
    out.push_back(std::move(weight));
    if (n.has_bias) {
      const StoredTensor& b = part(packed, n.node + ".bias", kept_units * (bits == 32 ? 4 : 2));
      node_parts.insert(b.name);
      std::vector<char> gone(static_cast<std::size_t>(units), 0);
      for (int64_t j : n.pruned_units) gone[static_cast<std::size_t>(j)] = 1;
      StoredTensor bias{n.node + ".bias", "F32", {units}, std::vector<uint8_t>(static_cast<std::size_t>(units) * 4, 0)};
      int64_t k = 0;
      for (int64_t j = 0; j < units; ++j) {
        if (gone[static_cast<std::size_t>(j)]) continue;
        float x;
        if (bits == 32) {
          std::memcpy(&x, b.data.data() + 4 * k, 4);
        } else {
          uint16_t h;
          std::memcpy(&h, b.data.data() + 2 * k, 2);
          x = half_to_float(h);
        }
        std::memcpy(bias.data.data() + 4 * j, &x, 4);
        ++k;
      }
      out.push_back(std::move(bias));
    }
  }
  for (const PackedTable& t : packed.tables) out.push_back(unpack_table(packed, t, node_parts));
  for (const StoredTensor& t : packed.tensors) {
    if (node_parts.count(t.name)) continue;
    if (static_cast<int64_t>(t.data.size()) != product(t.shape) * stored_dtype_size(t.dtype))
      throw Error("packed model: tensor '" + t.name + "' holds " + std::to_string(t.data.size()) + " bytes for shape " +
                  shape_text(t.shape) + " of " + t.dtype);
    out.push_back(t);
  }
  return out;
}

}  // namespace gradscope::compress
