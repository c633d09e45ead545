// TouchedRows: a tracked step's rows from its observed indices, and its sparse gradient rows.
#include "embedding/batch.h"

#include <algorithm>
#include <cstring>
#include <utility>

namespace gradscope::torch {

void sort_rows(std::vector<int64_t>& v, std::vector<int64_t>& scratch, int64_t max_value) {
  const std::size_t n = v.size();
  if (n < 64) {  // a histogram per byte costs more than comparisons here
    std::sort(v.begin(), v.end());
    return;
  }
  // LSD radix sort, one byte a pass, only as many passes as max_value has bytes: a batch of
  // 1024 indices into 10M rows takes 3 passes of 2 x 1024 moves, where a comparison sort
  // takes ~10,000 unpredictable branches.
  scratch.resize(n);
  int64_t* src = v.data();
  int64_t* dst = scratch.data();
  for (int shift = 0; shift < 64 && (max_value >> shift) > 0; shift += 8) {
    std::size_t start[257] = {};
    for (std::size_t i = 0; i < n; ++i) ++start[((src[i] >> shift) & 255) + 1];
    for (int b = 0; b < 256; ++b) start[b + 1] += start[b];
    for (std::size_t i = 0; i < n; ++i) dst[start[(src[i] >> shift) & 255]++] = src[i];
    std::swap(src, dst);
  }
  if (src != v.data()) v.swap(scratch);
}

void TouchedRows::build(std::vector<int64_t>& observed, std::vector<int64_t>& negatives,
                        int64_t padding_idx, int64_t table_rows) {
  rows_.clear();
  lookups_.clear();
  negatives_.clear();
  indexed_ = false;
  sort_rows(observed, scratch_, table_rows - 1);
  sort_rows(negatives, scratch_, table_rows - 1);
  // Runs of equal rows: one touched row each, its length the row's lookups. The padding row
  // is not a row the model learns.
  for (std::size_t i = 0; i < observed.size();) {
    std::size_t j = i + 1;
    while (j < observed.size() && observed[j] == observed[i]) ++j;
    if (observed[i] != padding_idx) {
      rows_.push_back(observed[i]);
      lookups_.push_back(static_cast<uint32_t>(std::min<std::size_t>(j - i, UINT32_MAX)));
    }
    i = j;
  }
  // Every negative was also observed, so a merge of the two sorted lists finds each one's row.
  negatives_.assign(rows_.size(), 0);
  std::size_t k = 0;
  for (int64_t r : negatives) {
    while (k < rows_.size() && rows_[k] < r) ++k;
    if (k < rows_.size() && rows_[k] == r && negatives_[k] < UINT32_MAX) ++negatives_[k];
  }
  observed.clear();
  negatives.clear();
}

void TouchedRows::assign(std::vector<int64_t> rows, std::vector<uint32_t> lookups,
                         std::vector<uint32_t> negatives) {
  rows_ = std::move(rows);
  lookups_ = std::move(lookups);
  negatives_ = std::move(negatives);
  indexed_ = false;
}

int64_t TouchedRows::find(int64_t row) {
  constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;  // Fibonacci hashing (Knuth, TAOCP 6.4)
  if (!indexed_) {
    std::size_t capacity = 16;
    shift_ = 60;
    while (capacity < 2 * rows_.size()) capacity *= 2, --shift_;
    keys_.assign(capacity, -1);
    slots_.resize(capacity);
    for (std::size_t k = 0; k < rows_.size(); ++k) {
      std::size_t h = (static_cast<uint64_t>(rows_[k]) * kGolden) >> shift_;
      while (keys_[h] != -1) h = (h + 1) & (capacity - 1);
      keys_[h] = rows_[k];
      slots_[h] = static_cast<int32_t>(k);
    }
    indexed_ = true;
  }
  const std::size_t mask = keys_.size() - 1;
  for (std::size_t h = (static_cast<uint64_t>(row) * kGolden) >> shift_;; h = (h + 1) & mask) {
    if (keys_[h] == row) return slots_[h];
    if (keys_[h] == -1) return -1;
  }
}

void sparse_gradient_rows(TouchedRows& touched, const int64_t* indices, int64_t nnz,
                          const float* values, int64_t dim, std::vector<float>& sums,
                          const float* zero, std::vector<const float*>& out) {
  const std::size_t T = touched.rows().size();
  out.assign(T, zero);
  const std::size_t need = T * static_cast<std::size_t>(dim);
  if (sums.size() < need) sums.resize(need);
  for (int64_t i = 0; i < nnz; ++i) {
    const int64_t k = touched.find(indices[i]);
    if (k < 0) continue;  // a row looked up without observe(): not tracked
    const float* v = values + i * dim;
    if (out[k] == zero) {  // first occurrence: read in place
      out[k] = v;
      continue;
    }
    float* sum = sums.data() + k * dim;
    if (out[k] != sum) {  // second occurrence: from here on a sum of its own
      std::memcpy(sum, out[k], static_cast<std::size_t>(dim) * sizeof(float));
      out[k] = sum;
    }
    for (int64_t j = 0; j < dim; ++j) sum[j] += v[j];
  }
}

}  // namespace gradscope::torch
