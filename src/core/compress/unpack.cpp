// unpack() and check_packed() (packed.h): a packed model's manifest and tensors are checked
// against each other first, every size in saturating arithmetic and every value that is read
// as an index or a scale, so that the decoding after it neither allocates what the file cannot
// back nor reads past a part.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "gradscope/core/compress/packed.h"
#include "gradscope/core/error.h"
#include "gradscope/core/stats/half.h"
#include "internal/packed_layout.h"

namespace gradscope::compress {
namespace {

using namespace internal;

std::string float_text(float v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", static_cast<double>(v));
  return buf;
}

// The tensors by name, and those a node or table has taken as its parts.
class Parts {
 public:
  explicit Parts(const PackedModel& p) {
    by_name_.reserve(p.tensors.size());
    for (const StoredTensor& t : p.tensors)
      if (!by_name_.emplace(t.name, &t).second) throw Error("tensor '" + t.name + "' appears twice");
  }

  // The part `name` of `owner` ("node 'fc'", a `kind`): declared as `dtype` [count], with the
  // bytes that says; present only once.
  const StoredTensor& take(const std::string& owner, const char* kind, const std::string& name, const char* dtype,
                           int64_t count) {
    const auto it = by_name_.find(name);
    if (it == by_name_.end()) throw Error(owner + ": tensor '" + name + "' is missing");
    const StoredTensor& t = *it->second;
    if (!taken_.insert(&t).second) throw Error(owner + ": tensor '" + name + "' is a part of another node or table");
    if (t.dtype != dtype || t.shape != std::vector<int64_t>{count})
      throw Error(owner + ": tensor '" + name + "' is " + t.dtype + " " + shape_text(t.shape) + ", its " + kind + " stores " +
                  dtype + " [" + std::to_string(count) + "]");
    const int64_t bytes = mul_sat(count, stored_dtype_size(dtype));
    if (static_cast<int64_t>(t.data.size()) != bytes)
      throw Error(owner + ": tensor '" + name + "' holds " + std::to_string(t.data.size()) + " bytes, its " + kind +
                  " needs " + std::to_string(bytes));
    return t;
  }
  bool taken(const StoredTensor& t) const { return taken_.count(&t) > 0; }

 private:
  std::unordered_map<std::string_view, const StoredTensor*> by_name_;  // names in the model
  std::unordered_set<const StoredTensor*> taken_;
};

// Throws unless every F32 of `t` is a scale of a grid of +-qmax levels (scale_fits).
void check_scales(const std::string& owner, const StoredTensor& t, int qmax) {
  for (std::size_t k = 0; k < t.data.size() / 4; ++k) {
    float s;
    std::memcpy(&s, t.data.data() + 4 * k, 4);
    if (!scale_fits(s, qmax))
      throw Error(owner + ": tensor '" + t.name + "': scale " + std::to_string(k) + " is " + float_text(s) +
                  " (a scale is finite, at least 0, and " + std::to_string(qmax) + " times it finite)");
  }
}

// `list` (of `what`s: units or inputs) strictly ascending in 0..limit-1 and not all of them.
void check_indices(const std::vector<int64_t>& list, int64_t limit, const std::string& where, const std::string& what) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string v = std::to_string(list[i]);
    if (list[i] < 0 || list[i] >= limit)
      throw Error(where + ": " + what + " " + v + " is not in 0.." + std::to_string(limit - 1));
    if (i > 0 && list[i] == list[i - 1]) throw Error(where + ": " + what + " " + v + " is listed twice");
    if (i > 0 && list[i] < list[i - 1]) throw Error(where + ": not ascending");
  }
  if (!list.empty() && static_cast<int64_t>(list.size()) >= limit) throw Error(where + ": prunes every " + what);
}

struct NodePlan {
  const PackedNode* node = nullptr;
  int64_t numel = 0;
  const StoredTensor *codes = nullptr, *scales = nullptr, *values = nullptr, *mask = nullptr, *bias = nullptr;
};

NodePlan plan_node(const PackedNode& n, Parts& parts) {
  const std::string who = "node '" + n.node + "'";
  NodePlan plan;
  plan.node = &n;
  if (n.weight_shape.empty()) throw Error(who + ": weight_shape is empty");
  for (int64_t d : n.weight_shape)
    if (d < 1) throw Error(who + ": weight_shape " + shape_text(n.weight_shape) + " has a dimension below 1");
  plan.numel = product(n.weight_shape);
  if (mul_sat(plan.numel, 4) == kTooLarge)
    throw Error(who + ": weight_shape " + shape_text(n.weight_shape) + " is beyond 2^63 bytes as F32");
  const int64_t units = n.weight_shape[0], inputs = n.weight_shape.size() < 2 ? 1 : n.weight_shape[1];
  check_indices(n.pruned_units, units, who + ": pruned_units", "unit");
  check_indices(n.pruned_inputs, inputs, who + ": pruned_inputs", "input");
  const int64_t kept_units = units - static_cast<int64_t>(n.pruned_units.size());
  // At most numel: no overflow once numel fits.
  int64_t kept = kept_units * (inputs - static_cast<int64_t>(n.pruned_inputs.size())) * product(n.weight_shape, 2);
  auto take = [&](const std::string& suffix, const char* dtype, int64_t count) {
    return &parts.take(who, "node", n.node + suffix, dtype, count);
  };
  if (n.bitmap) {  // the bitmap's size bounds the weights counted
    plan.mask = take(".weight.mask", "U8", bits_bytes(plan.numel, 1));
    kept = 0;
    for_kept(n.weight_shape, n.pruned_units, n.pruned_inputs, &plan.mask->data, [&](int64_t, int64_t) { ++kept; });
  }
  const int bits = precision_bits(n.precision);
  if (bits <= 8) {
    plan.codes = take(".weight.codes", "U8", bits_bytes(kept, bits));
    plan.scales = take(".weight.scales", "F32", kept_units);
    check_scales(who, *plan.scales, quant_max(n.precision));
  } else {
    plan.values = take(".weight", bits == 16 ? "F16" : "F32", kept);
  }
  if (n.has_bias) plan.bias = take(".bias", bits == 32 ? "F32" : "F16", kept_units);
  int64_t bytes = 0;
  for (const StoredTensor* t : {plan.mask, plan.codes, plan.scales, plan.values, plan.bias})
    if (t) bytes += static_cast<int64_t>(t->data.size());
  if (bytes != n.bytes)
    throw Error(who + ": bytes is " + std::to_string(n.bytes) + " in the manifest, its tensors hold " + std::to_string(bytes));
  return plan;
}

struct TablePlan {
  const PackedTable* table = nullptr;
  int code_bits = 0;
  const StoredTensor* codes = nullptr;
  // Per level, its stored rows (FP32, FP16, an integer level's codes), the fallback row
  // (pruned) or the merged rows' indices (merged); an integer level's scales.
  const StoredTensor* values[kRowLevels] = {};
  const StoredTensor* scales[kRowLevels] = {};
  int index_bits = 0;  // of a merged row's index

  uint8_t level_of(int64_t row) const {
    return code_bits == 0 ? table->levels[0] : table->levels[read_bits_at(codes->data, code_bits, row * code_bits)];
  }
};

TablePlan plan_table(const PackedTable& t, Parts& parts) {
  const std::string who = "table '" + t.name + "'";
  TablePlan plan;
  plan.table = &t;
  if (t.rows < 1 || t.dim < 1)
    throw Error(who + ": rows and dim must be at least 1, got " + std::to_string(t.rows) + " x " + std::to_string(t.dim));
  if (mul_sat(mul_sat(t.rows, t.dim), 4) == kTooLarge)
    throw Error(who + ": rows x dim (" + std::to_string(t.rows) + " x " + std::to_string(t.dim) +
                ") is beyond 2^63 bytes as F32");
  if (t.levels.empty()) throw Error(who + ": levels is empty");
  for (std::size_t k = 0; k < t.levels.size(); ++k) {
    if (t.levels[k] >= kRowLevels) throw Error(who + ": levels: level " + std::to_string(t.levels[k]) + " is not one");
    if (k > 0 && t.levels[k] == t.levels[k - 1])
      throw Error(who + ": levels: " + row_level_name(t.levels[k]) + " is listed twice");
    if (k > 0 && t.levels[k] < t.levels[k - 1]) throw Error(who + ": levels: not ascending");
  }
  int64_t bytes = 0;
  auto take = [&](const std::string& part, const char* dtype, int64_t count) -> const StoredTensor* {
    if (count == 0) return nullptr;  // only the parts with content are written
    const StoredTensor* x = &parts.take(who, "table", t.name + ".rows." + part, dtype, count);
    bytes += static_cast<int64_t>(x->data.size());
    return x;
  };
  plan.code_bits = row_code_bits(static_cast<int>(t.levels.size()));
  // With codes, their size bounds the rows counted; without, every row is at the one level.
  int64_t count[kRowLevels] = {};
  if (plan.code_bits == 0) {
    count[t.levels[0]] = t.rows;
  } else {
    plan.codes = take("codes", "U8", bits_bytes(t.rows, plan.code_bits));
    for (int64_t i = 0; i < t.rows; ++i) {
      const uint32_t c = read_bits_at(plan.codes->data, plan.code_bits, i * plan.code_bits);
      if (c >= t.levels.size()) throw Error(who + ": row " + std::to_string(i) + " has no level " + std::to_string(c));
      ++count[t.levels[c]];
    }
  }
  // Rows that store nothing cost a few bits each: a table of them alone has no size to check.
  if (count[kRowPruned] + count[kRowMerged] == t.rows) throw Error(who + ": every row is pruned or merged");
  // Each count below is at most rows x dim: no overflow once that fits.
  plan.values[kRowFp32] = take("fp32", "F32", count[kRowFp32] * t.dim);
  plan.values[kRowFp16] = take("fp16", "F16", count[kRowFp16] * t.dim);
  for (uint8_t l = 0; l < kRowLevels; ++l)
    if (const int bits = row_level_int_bits(l)) {
      const std::string level = "int" + std::to_string(bits);
      plan.values[l] = take(level + ".codes", "U8", count[l] * bits_bytes(t.dim, bits));
      plan.scales[l] = take(level + ".scales", "F32", count[l]);
      if (plan.scales[l]) check_scales(who, *plan.scales[l], (1 << (bits - 1)) - 1);
    }
  if (const StoredTensor* fallback = plan.values[kRowPruned] = take("fallback", "F32", count[kRowPruned] ? t.dim : 0))
    for (int64_t k = 0; k < t.dim; ++k) {
      float v;
      std::memcpy(&v, fallback->data.data() + 4 * k, 4);
      if (!std::isfinite(v))
        throw Error(who + ": tensor '" + fallback->name + "': value " + std::to_string(k) + " is " + float_text(v) +
                    " (the row pruned rows are served is finite)");
    }
  if (count[kRowMerged] > 0) {
    plan.index_bits = static_cast<int>(row_index_bits(t.rows));  // rows < 2^61: at most 61
    if (plan.index_bits > 32)
      throw Error(who + ": merged rows index at most 2^32 rows, the table has " + std::to_string(t.rows));
    const StoredTensor* merged = plan.values[kRowMerged] = take("merged", "U8", bits_bytes(count[kRowMerged], plan.index_bits));
    int64_t k = 0;
    for (int64_t i = 0; i < t.rows; ++i) {
      if (plan.level_of(i) != kRowMerged) continue;
      const int64_t m = read_bits_at(merged->data, plan.index_bits, k++ * plan.index_bits);
      if (m >= t.rows || plan.level_of(m) >= kRowPruned)
        throw Error(who + ": merged row " + std::to_string(i) + " shares row " + std::to_string(m) + ", not a stored row");
    }
  }
  if (bytes != t.bytes)
    throw Error(who + ": bytes is " + std::to_string(t.bytes) + " in the manifest, its tensors hold " + std::to_string(bytes));
  return plan;
}

// Every check, and what unpack() decodes.
struct Plan {
  std::vector<NodePlan> nodes;
  std::vector<TablePlan> tables;
  std::vector<const StoredTensor*> plain;  // the other entries, as stored
  std::vector<EntryShape> dense;           // unpack()'s entries
};

Plan plan_of(const PackedModel& p, const std::string& source) {
  try {
    Parts parts(p);
    Plan plan;
    std::unordered_set<std::string> entries;  // of the dense state: a loader takes one of each
    auto add = [&](const std::string& name, const std::string& dtype, std::vector<int64_t> shape, const char* kind,
                   const std::string& owner) {
      if (!entries.insert(name).second)
        throw Error("entry '" + name + "' is given twice (" + kind + " '" + owner + "' gives it again)");
      plan.dense.push_back({name, dtype, std::move(shape)});
    };
    std::unordered_set<std::string_view> names;
    for (const PackedNode& n : p.nodes) {
      if (!names.insert(n.node).second) throw Error("node '" + n.node + "' is listed twice");
      plan.nodes.push_back(plan_node(n, parts));
      add(n.node + ".weight", "F32", n.weight_shape, "node", n.node);
      if (n.has_bias) add(n.node + ".bias", "F32", {n.weight_shape[0]}, "node", n.node);
    }
    names.clear();
    for (const PackedTable& t : p.tables) {
      if (!names.insert(t.name).second) throw Error("table '" + t.name + "' is listed twice");
      plan.tables.push_back(plan_table(t, parts));
      add(t.name, "F32", {t.rows, t.dim}, "table", t.name);
    }
    for (const StoredTensor& t : p.tensors) {
      if (parts.taken(t)) continue;
      const int64_t size = stored_dtype_size(t.dtype);
      for (int64_t d : t.shape)
        if (d < 0) throw Error("tensor '" + t.name + "': shape " + shape_text(t.shape) + " has a negative dimension");
      if (static_cast<int64_t>(t.data.size()) != mul_sat(product(t.shape), size))
        throw Error("tensor '" + t.name + "' holds " + std::to_string(t.data.size()) + " bytes for shape " +
                    shape_text(t.shape) + " of " + t.dtype);
      add(t.name, t.dtype, t.shape, "tensor", t.name);
      plan.plain.push_back(&t);
    }
    return plan;
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
}

float stored_float(const std::vector<uint8_t>& bytes, int64_t i, int size) {
  if (size == 4) {
    float x;
    std::memcpy(&x, bytes.data() + 4 * i, 4);
    return x;
  }
  uint16_t h;
  std::memcpy(&h, bytes.data() + 2 * i, 2);
  return half_to_float(h);
}

StoredTensor node_weight(const NodePlan& plan) {
  const PackedNode& n = *plan.node;
  StoredTensor out{n.node + ".weight", "F32", n.weight_shape, std::vector<uint8_t>(static_cast<std::size_t>(plan.numel) * 4)};
  float* w = reinterpret_cast<float*>(out.data.data());
  const std::vector<uint8_t>* bitmap = plan.mask ? &plan.mask->data : nullptr;
  const int bits = precision_bits(n.precision);
  int64_t index = 0;
  if (bits <= 8) {
    for_kept(n.weight_shape, n.pruned_units, n.pruned_inputs, bitmap, [&](int64_t u, int64_t flat) {
      const float scale = stored_float(plan.scales->data, u, 4);
      w[flat] = static_cast<float>(q_of(read_bits_at(plan.codes->data, bits, index++ * bits), bits)) * scale;
    });
  } else {
    for_kept(n.weight_shape, n.pruned_units, n.pruned_inputs, bitmap,
             [&](int64_t, int64_t flat) { w[flat] = stored_float(plan.values->data, index++, bits / 8); });
  }
  return out;
}

StoredTensor node_bias(const NodePlan& plan) {
  const PackedNode& n = *plan.node;
  const int64_t units = n.weight_shape[0];
  StoredTensor out{n.node + ".bias", "F32", {units}, std::vector<uint8_t>(static_cast<std::size_t>(units) * 4, 0)};
  const int size = precision_bits(n.precision) == 32 ? 4 : 2;
  auto gone = n.pruned_units.begin();  // ascending
  for (int64_t j = 0, k = 0; j < units; ++j) {
    if (gone != n.pruned_units.end() && *gone == j) {
      ++gone;
      continue;
    }
    const float x = stored_float(plan.bias->data, k++, size);
    std::memcpy(out.data.data() + 4 * j, &x, 4);
  }
  return out;
}

StoredTensor table_values(const TablePlan& plan) {
  const PackedTable& t = *plan.table;
  const int64_t dim = t.dim;
  StoredTensor out{t.name, "F32", {t.rows, dim}, std::vector<uint8_t>(static_cast<std::size_t>(t.rows * dim * 4))};
  float* v = reinterpret_cast<float*>(out.data.data());
  int64_t at[kRowLevels] = {};
  std::vector<std::pair<int64_t, int64_t>> shares;  // merged row, its representative
  for (int64_t i = 0; i < t.rows; ++i) {
    const uint8_t l = plan.level_of(i);
    float* row = v + i * dim;
    const int64_t k = at[l]++;
    const std::vector<uint8_t>* values = plan.values[l] ? &plan.values[l]->data : nullptr;
    if (const int bits = row_level_int_bits(l)) {
      const int64_t row_bits = bits_bytes(dim, bits) * 8;  // each row's codes start at a byte boundary
      const float scale = stored_float(plan.scales[l]->data, k, 4);
      for (int64_t j = 0; j < dim; ++j)
        row[j] = static_cast<float>(q_of(read_bits_at(*values, bits, k * row_bits + j * bits), bits)) * scale;
      continue;
    }
    switch (l) {
      case kRowFp32: std::memcpy(row, values->data() + k * dim * 4, static_cast<std::size_t>(dim * 4)); break;
      case kRowFp16:
        for (int64_t j = 0; j < dim; ++j) row[j] = stored_float(*values, k * dim + j, 2);
        break;
      case kRowPruned: std::memcpy(row, values->data(), static_cast<std::size_t>(dim * 4)); break;
      default: shares.emplace_back(i, read_bits_at(*values, plan.index_bits, k * plan.index_bits));
    }
  }
  for (const auto& [i, m] : shares) std::memcpy(v + i * dim, v + m * dim, static_cast<std::size_t>(dim * 4));
  return out;
}

}  // namespace

std::vector<EntryShape> check_packed(const PackedModel& packed, const std::string& source) {
  return plan_of(packed, source).dense;
}

std::vector<StoredTensor> unpack(const PackedModel& packed) {
  const Plan plan = plan_of(packed, "packed model");
  std::vector<StoredTensor> out;
  out.reserve(plan.dense.size());
  for (const NodePlan& n : plan.nodes) {
    out.push_back(node_weight(n));
    if (n.bias) out.push_back(node_bias(n));
  }
  for (const TablePlan& t : plan.tables) out.push_back(table_values(t));
  for (const StoredTensor* t : plan.plain) out.push_back(*t);
  return out;
}

}  // namespace gradscope::compress
