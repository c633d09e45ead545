// Compression of embedding tables, row by row: each row at FP32, FP16, INT8, INT4, INT3 or INT2
// (one FP32 scale per row, symmetric) or pruned and served by the table's fallback row (the mean of its trained
// rows), chosen by frequency-aware saliency under a byte budget (docs/compression.md).
//
//   RowProfile t = ...;                    // rows' lookups (tracker) and norms (final table)
//   RowRecipe r = gradscope::compress::make_row_recipe(t, /*budget_bytes=*/40000);
//   // r.level[row]: kRowFp32 .. kRowPruned; r.bytes as stored
//
// Storage: kept rows at their precision (+4 bytes of scale for INT8/4/3/2), a code per row of
// ceil(log2 k) bits when k > 1 levels are present, and the FP32 fallback row when any is pruned.
// Merged rows (near-identical to another row, sharing its stored values) store the index of the
// row they share, ceil(log2 rows) bits each. The packed file holds exactly this (packed.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gradscope::compress {

/// What a row becomes.
/// What a row becomes, from most to fewest bits (the rule moves a row one level down at a time;
/// every level from kRowPruned on stores no values).
enum RowLevel : uint8_t {
  kRowFp32 = 0,
  kRowFp16 = 1,
  kRowInt8 = 2,
  kRowInt4 = 3,
  kRowInt3 = 4,
  kRowInt2 = 5,
  kRowPruned = 6,
  kRowMerged = 7
};
constexpr int kRowLevels = 8;
/// "fp32", "fp16", "int8", "int4", "int3", "int2", "pruned", "merged".
const char* row_level_name(uint8_t level);
/// Bits a value of an integer level (8, 4, 3, 2); 0 for the others.
int row_level_int_bits(uint8_t level);

/// One table: per row its positive lookups during training (how often it was a query or a
/// positive; the tracker's lookups minus negatives), whether it was ever exposed, and its final
/// values' max |x|, sum x^2 and squared distance to the fallback row.
struct RowProfile {
  std::string table;
  int64_t rows = 0, dim = 0;
  std::vector<double> lookups;
  std::vector<char> exposed;
  std::vector<double> max_abs, sum_sq, fallback_sq;
  std::vector<double> fallback;  ///< the fallback row (dim values): the mean of the exposed rows
  /// Empty, or per row the row it may share (a representative, itself never merged; -1: none)
  /// and the squared distance to it (torch/compress/apply_recipe.h: add_merge_candidates).
  std::vector<int64_t> merge_into;
  std::vector<double> merge_sq;
};

/// Which signal weighs a row's error (the ablation drops the frequency).
struct RowRuleOptions {
  bool use_frequency = true;
  /// Rows with a merge candidate end their ladder merged into it instead of pruned (error: the
  /// squared distance to it); representatives are never pruned and weigh their members' lookups.
  bool merge = false;
};

struct RowRecipe {
  std::string table, method;
  int64_t rows = 0, dim = 0;
  std::vector<uint8_t> level;  ///< RowLevel per row
  std::vector<int64_t> merged_into;  ///< empty, or per row the row whose values a merged row shares (-1 others)
  std::vector<double> fallback;  ///< what pruned rows are served (copied from the profile)
  int64_t bytes = 0, fp32_bytes = 0;
  double predicted_cost = 0;   ///< sum over rows of weight x squared error
  std::string premise, action;
};

/// Bytes of a table stored as `level` says (the layout above).
int64_t row_bytes(int64_t dim, const std::vector<uint8_t>& level);
/// Bits of a row's code telling which of `distinct` levels it is: ceil(log2 distinct).
int row_code_bits(int distinct);
/// Bytes of `rows` codes, each telling which of `distinct` levels a row is (0 for one level).
int64_t row_code_bytes(int64_t rows, int distinct);
/// Bits of a merged row's index: ceil(log2 rows).
int64_t row_index_bits(int64_t rows);

/// Every row at one level (kRowInt8 ... kRowInt2 for the uniform baselines).
RowRecipe uniform_row_recipe(const RowProfile& t, RowLevel level);

/// Rows ordered by `key` ascending are pruned, the rest at `kept`, as many pruned as the budget
/// needs (the "magnitude" and "frequency" baselines). Throws Error when pruning every row
/// but one does not fit.
RowRecipe prune_row_recipe(const RowProfile& t, const std::vector<double>& key, RowLevel kept, int64_t budget_bytes,
                           const std::string& method);

/// The rule: never-exposed rows are pruned first (they hold their initial values); then,
/// greedily, the row move (one level down) with the least weighted squared error per byte saved,
/// weight = positive lookups + 1, until the table fits `budget_bytes`. Throws Error for an
/// invalid profile or a budget below the smallest reachable size (every row pruned but one).
RowRecipe make_row_recipe(const RowProfile& t, int64_t budget_bytes, const RowRuleOptions& options = {});

/// Checks sizes and values of a profile; throws Error naming the table.
void check_row_profile(const RowProfile& t);

}  // namespace gradscope::compress
