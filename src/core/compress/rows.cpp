#include "gradscope/core/compress/rows.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>

#include "gradscope/core/error.h"

namespace gradscope::compress {
namespace {

int64_t level_bytes(int64_t dim, uint8_t level) {
  if (const int bits = row_level_int_bits(level)) return (dim * bits + 7) / 8 + 4;  // codes from a byte boundary, the scale
  switch (level) {
    case kRowFp32: return 4 * dim;
    case kRowFp16: return 2 * dim;
    default: return 0;
  }
}

// Squared error of row r at `level`: rounding noise (step^2 / 12 per value; FP16 11
// significant bits) or, pruned, the distance to the fallback row.
double level_error(const RowProfile& t, int64_t r, uint8_t level) {
  const double d = static_cast<double>(t.dim);
  if (const int bits = row_level_int_bits(level)) return d * std::pow(t.max_abs[r] / ((1 << (bits - 1)) - 1), 2) / 12.0;
  switch (level) {
    case kRowFp32: return 0.0;
    case kRowFp16: return t.sum_sq[r] * std::ldexp(1.0, -22) / 3.0;
    case kRowMerged: return t.merge_sq[r];
    default: return t.fallback_sq[r];
  }
}

RowRecipe base(const RowProfile& t, const std::string& method) {
  check_row_profile(t);
  RowRecipe r;
  r.table = t.table;
  r.method = method;
  r.rows = t.rows;
  r.dim = t.dim;
  r.level.assign(static_cast<std::size_t>(t.rows), kRowFp32);
  r.fallback = t.fallback;
  r.fp32_bytes = row_bytes(t.dim, r.level);
  return r;
}

}  // namespace

int row_level_int_bits(uint8_t level) {
  switch (level) {
    case kRowInt8: return 8;
    case kRowInt4: return 4;
    case kRowInt3: return 3;
    case kRowInt2: return 2;
    default: return 0;
  }
}

const char* row_level_name(uint8_t level) {
  static const char* const kNames[kRowLevels] = {"fp32", "fp16", "int8", "int4", "int3", "int2", "pruned", "merged"};
  return level < kRowLevels ? kNames[level] : "unknown";
}

int row_code_bits(int distinct) {
  int bits = 0;
  while ((1 << bits) < distinct) ++bits;
  return bits;
}

int64_t row_code_bytes(int64_t rows, int distinct) { return (rows * row_code_bits(distinct) + 7) / 8; }

int64_t row_index_bits(int64_t rows) {
  int64_t bits = 0;
  while ((int64_t{1} << bits) < rows) ++bits;
  return bits;
}

int64_t row_bytes(int64_t dim, const std::vector<uint8_t>& level) {
  int64_t bytes = 0, merged = 0;
  bool present[kRowLevels] = {};
  for (uint8_t l : level) {
    bytes += level_bytes(dim, l);
    present[std::min<int>(l, kRowLevels - 1)] = true;
    merged += l == kRowMerged;
  }
  const auto rows = static_cast<int64_t>(level.size());
  const int distinct = static_cast<int>(std::count(present, present + kRowLevels, true));
  bytes += row_code_bytes(rows, distinct);                                    // which level each row is
  bytes += (merged * row_index_bits(rows) + 7) / 8;                           // the row each merged row shares
  if (present[kRowPruned]) bytes += 4 * dim;                                  // the fallback row
  return bytes;
}

void check_row_profile(const RowProfile& t) {
  const std::string who = "embedding table '" + t.table + "': ";
  if (t.rows < 1 || t.dim < 1) throw Error(who + "needs rows and dim >= 1");
  const auto n = static_cast<std::size_t>(t.rows);
  if (t.lookups.size() != n || t.exposed.size() != n || t.max_abs.size() != n || t.sum_sq.size() != n ||
      t.fallback_sq.size() != n || t.fallback.size() != static_cast<std::size_t>(t.dim))
    throw Error(who + "per-row statistics do not have " + std::to_string(t.rows) + " values");
  for (std::size_t i = 0; i < n; ++i)
    if (!(t.lookups[i] >= 0) || !(t.max_abs[i] >= 0) || !(t.sum_sq[i] >= 0) || !(t.fallback_sq[i] >= 0) ||
        !std::isfinite(t.lookups[i] + t.max_abs[i] + t.sum_sq[i] + t.fallback_sq[i]))
      throw Error(who + "row " + std::to_string(i) + " has a negative or non-finite statistic");
  if (t.merge_into.empty() && t.merge_sq.empty()) return;
  if (t.merge_into.size() != n || t.merge_sq.size() != n)
    throw Error(who + "merge candidates do not have " + std::to_string(t.rows) + " values");
  for (std::size_t i = 0; i < n; ++i) {
    const int64_t m = t.merge_into[i];
    if (m < -1 || m >= t.rows || m == static_cast<int64_t>(i) || (m >= 0 && t.merge_into[m] != -1) ||
        !(t.merge_sq[i] >= 0) || !std::isfinite(t.merge_sq[i]))
      throw Error(who + "row " + std::to_string(i) + ": merge candidate " + std::to_string(m) +
                  " is not another row that is itself not merged, or its distance is not finite");
  }
}

RowRecipe uniform_row_recipe(const RowProfile& t, RowLevel level) {
  RowRecipe r = base(t, std::string("uniform-") + row_level_name(level));
  std::fill(r.level.begin(), r.level.end(), static_cast<uint8_t>(level));
  r.bytes = row_bytes(t.dim, r.level);
  for (int64_t i = 0; i < t.rows; ++i) r.predicted_cost += (t.lookups[i] + 1) * level_error(t, i, level);
  return r;
}

RowRecipe prune_row_recipe(const RowProfile& t, const std::vector<double>& key, RowLevel kept, int64_t budget_bytes,
                           const std::string& method) {
  RowRecipe r = base(t, method);
  if (static_cast<int64_t>(key.size()) != t.rows) throw Error("embedding table '" + t.table + "': one key per row needed");
  std::fill(r.level.begin(), r.level.end(), static_cast<uint8_t>(kept));
  std::vector<int64_t> order(static_cast<std::size_t>(t.rows));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return key[a] < key[b]; });
  // Pruning k rows: (rows - k) kept rows, the codes and the fallback row.
  const int64_t per_row = level_bytes(t.dim, kept), fixed = row_code_bytes(t.rows, 2) + 4 * t.dim;
  int64_t k = t.rows - (budget_bytes - fixed) / std::max<int64_t>(1, per_row);
  if (k >= t.rows || budget_bytes < fixed + per_row)
    throw Error("embedding table '" + t.table + "': budget of " + std::to_string(budget_bytes) +
                " bytes cannot be met by pruning rows");
  k = std::max<int64_t>(1, k);
  for (int64_t i = 0; i < k; ++i) r.level[order[i]] = kRowPruned;
  r.bytes = row_bytes(t.dim, r.level);
  r.premise = "baseline: rows with the smallest key pruned";
  r.action = std::to_string(k) + " of " + std::to_string(t.rows) + " rows pruned, the rest stored at one precision";
  return r;
}

RowRecipe make_row_recipe(const RowProfile& t, int64_t budget_bytes, const RowRuleOptions& options) {
  RowRecipe r = base(t, options.use_frequency ? "dynamics" : "static");
  const int64_t least = level_bytes(t.dim, kRowInt2) + row_code_bytes(t.rows, t.rows > 1 ? 2 : 1) + 4 * t.dim;
  if (budget_bytes < least)
    throw Error("embedding table '" + t.table + "': budget of " + std::to_string(budget_bytes) +
                " bytes cannot be met: the smallest reachable size is " + std::to_string(least) +
                " bytes (one row at int2, the rest pruned)");
  const bool merging = options.merge && !t.merge_into.empty();
  // A representative serves its members' lookups too, and is never pruned (they share it).
  std::vector<double> served(t.lookups);
  std::vector<char> representative(static_cast<std::size_t>(t.rows), 0);
  if (merging)
    for (int64_t i = 0; i < t.rows; ++i)
      if (t.merge_into[i] >= 0) served[t.merge_into[i]] += t.lookups[i], representative[t.merge_into[i]] = 1;
  auto weight = [&](int64_t i) { return options.use_frequency ? served[i] + 1.0 : 1.0; };
  // The ladder's last step: merged into the candidate where there is one, else pruned.
  auto last = [&](int64_t i) -> uint8_t { return merging && t.merge_into[i] >= 0 ? kRowMerged : kRowPruned; };
  // One level down, skipping levels that save no bytes (FP16 and INT8 take the same 8 bytes for
  // 4 values): a move that saves nothing would never be taken and would strand the row.
  auto down = [&](int64_t i) -> uint8_t {
    uint8_t n = r.level[i];
    do n = n == kRowInt2 ? last(i) : static_cast<uint8_t>(n + 1);
    while (n < kRowPruned && level_bytes(t.dim, n) >= level_bytes(t.dim, r.level[i]));
    return n;
  };
  int64_t never = 0;
  if (options.use_frequency)
    for (int64_t i = 0; i < t.rows; ++i)
      if (!t.exposed[i] && !representative[i] && never + 1 < t.rows) r.level[i] = kRowPruned, ++never;
  // Each row's next move, cheapest weighted error per byte first. The codes take as many bits a
  // row as the levels present need, the fallback row counts from the first pruned row on.
  using Entry = std::pair<double, int64_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> next;
  auto push = [&](int64_t i) {
    const uint8_t l = r.level[i];
    if (l >= kRowPruned || (l == kRowInt2 && representative[i])) return;
    const uint8_t n = down(i);
    const double saved = static_cast<double>(level_bytes(t.dim, l) - level_bytes(t.dim, n));
    next.push({weight(i) * (level_error(t, i, n) - level_error(t, i, l)) / saved, i});
  };
  for (int64_t i = 0; i < t.rows; ++i) push(i);
  int64_t sum = 0, kept = t.rows - never, pruned = never, merged = 0;
  std::vector<int64_t> count(kRowLevels, 0);
  for (uint8_t l : r.level) sum += level_bytes(t.dim, l), ++count[l];
  const int64_t index_bits = row_index_bits(t.rows);
  auto total = [&] {
    const int distinct = static_cast<int>(std::count_if(count.begin(), count.end(), [](int64_t c) { return c > 0; }));
    return sum + row_code_bytes(t.rows, distinct) + (merged * index_bits + 7) / 8 + (pruned > 0 ? 4 * t.dim : 0);
  };
  while (total() > budget_bytes && !next.empty()) {
    const int64_t i = next.top().second;
    next.pop();
    const uint8_t n = down(i);
    if (n >= kRowPruned && kept == 1) continue;  // one row stays
    sum -= level_bytes(t.dim, r.level[i]) - level_bytes(t.dim, n);
    --count[r.level[i]], ++count[n];
    r.level[i] = n;
    if (n >= kRowPruned) --kept;
    pruned += n == kRowPruned;
    merged += n == kRowMerged;
    push(i);
  }
  if (total() > budget_bytes)  // representatives are never pruned, so merging can stop above it
    throw Error("embedding table '" + t.table + "': budget of " + std::to_string(budget_bytes) +
                " bytes cannot be met with merged rows: the rule stopped at " + std::to_string(total()) + " bytes");
  if (merging) r.method += "-merge";
  if (merged > 0) {
    r.merged_into.assign(static_cast<std::size_t>(t.rows), -1);
    for (int64_t i = 0; i < t.rows; ++i)
      if (r.level[i] == kRowMerged) r.merged_into[i] = t.merge_into[i];
  }
  r.bytes = row_bytes(t.dim, r.level);
  for (int64_t i = 0; i < t.rows; ++i) r.predicted_cost += weight(i) * level_error(t, i, r.level[i]);
  r.premise = std::to_string(never) + " of " + std::to_string(t.rows) +
              " rows never exposed in training (their values are their initial ones)" +
              (options.use_frequency ? "; a row's error weighs its positive lookups + 1" : "");
  r.action = std::to_string(count[kRowFp32]) + " rows fp32, " + std::to_string(count[kRowFp16]) + " fp16, " +
             std::to_string(count[kRowInt8]) + " int8, " + std::to_string(count[kRowInt4]) + " int4, " +
             std::to_string(count[kRowInt3]) + " int3, " + std::to_string(count[kRowInt2]) + " int2, " +
             std::to_string(count[kRowPruned]) + " pruned (served by the fallback row, the mean of the trained rows)" +
             (merging ? ", " + std::to_string(count[kRowMerged]) + " merged (served by a near-identical row)" : "");
  return r;
}

}  // namespace gradscope::compress
