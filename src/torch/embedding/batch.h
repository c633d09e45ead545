// The rows one tracked step touched, built from the indices observed in it, and where each
// touched row's gradient is found (internal to the EmbeddingTracker).
//
//   TouchedRows t;
//   t.build(observed, negatives, padding_idx, table_rows);  // sorts and consumes both
//   for (std::size_t k = 0; k < t.rows().size(); ++k) use(t.rows()[k], t.lookups()[k]);
//   int64_t k = t.find(row);                                // -1 when not touched
#pragma once

#include <cstdint>
#include <vector>

namespace gradscope::torch {

/// Sorts row indices in [0, max_value] ascending; `scratch` is reused between calls.
void sort_rows(std::vector<int64_t>& v, std::vector<int64_t>& scratch, int64_t max_value);

class TouchedRows {
 public:
  /// The unique rows of `observed` (every role, with repeats) except `padding_idx`, with how
  /// often each occurs there and in `negatives`; both are sorted (left in an unspecified
  /// order) and cleared. Indices must be in [0, table_rows).
  void build(std::vector<int64_t>& observed, std::vector<int64_t>& negatives, int64_t padding_idx,
             int64_t table_rows);
  /// Replaces the rows (ascending, unique) and their counts, e.g. by the job's across ranks.
  void assign(std::vector<int64_t> rows, std::vector<uint32_t> lookups, std::vector<uint32_t> negatives);
  /// Touched rows, ascending.
  const std::vector<int64_t>& rows() const { return rows_; }
  /// Occurrences of rows()[k] in this step's batches (all roles), and as negatives.
  const std::vector<uint32_t>& lookups() const { return lookups_; }
  const std::vector<uint32_t>& negatives() const { return negatives_; }
  /// Position of `row` in rows(), -1 when not touched. O(1): a hash table built on first use
  /// in a step, kept in cache whatever the table size.
  int64_t find(int64_t row);

 private:
  std::vector<int64_t> rows_, scratch_;
  std::vector<uint32_t> lookups_, negatives_;
  std::vector<int64_t> keys_;  // open addressing, linear probing; -1 empty
  std::vector<int32_t> slots_;
  int shift_ = 64;
  bool indexed_ = false;
};

/// Row k's gradient from a row-sparse gradient (row indices[i] has values + i x dim; repeats
/// add up), for every touched row: a pointer into `values` where the row occurs once, into
/// `sums` (T x dim, grown as needed, reused) where it occurs more often, `zero` where it does
/// not occur. Indices of untouched rows are skipped.
void sparse_gradient_rows(TouchedRows& touched, const int64_t* indices, int64_t nnz,
                          const float* values, int64_t dim, std::vector<float>& sums,
                          const float* zero, std::vector<const float*>& out);

}  // namespace gradscope::torch
