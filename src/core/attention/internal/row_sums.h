// One query row of attention logits reduced to what the head statistics need: the largest
// visible logit m, and z = sum exp(l - m), s = sum exp(l - m) (l - m) over the visible keys.
// A scalar version for any CPU and an AVX2 one (row_sums_avx2.cpp, after a runtime check);
// both read keys [begin, end) with the scalar helpers below, so the vector one's tail is the
// scalar code itself.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace gradscope::internal {

struct RowSums {
  float max = -std::numeric_limits<float>::infinity();  ///< largest finite visible logit
  int64_t visible = 0;    ///< keys the query sees: not -inf and not zero in the mask
  bool nonfinite = false; ///< a visible logit is NaN or +Inf (the row is then not summed)
  double z = 0, s = 0;    ///< filled only when visible > 0 and !nonfinite
};

inline bool key_hidden(const float* row, const uint8_t* see, int64_t k) {
  return (see && !see[k]) || row[k] == -std::numeric_limits<float>::infinity();
}

/// First pass over keys [begin, end): visible count, largest finite logit, non-finite flag.
inline void scan_keys(const float* row, const uint8_t* see, int64_t begin, int64_t end, RowSums& r) {
  for (int64_t k = begin; k < end; ++k) {
    if (key_hidden(row, see, k)) continue;
    const float l = row[k];
    ++r.visible;
    if (!(l < std::numeric_limits<float>::infinity())) r.nonfinite = true;  // NaN or +Inf
    else r.max = std::max(r.max, l);
  }
}

/// Second pass over keys [begin, end) around r.max: exp in float (the logits are float; a few
/// times faster than in double), sums in double. The difference is taken in double: logits
/// that span more than FLT_MAX (3e38 and -3e38) overflow it to -inf in float, and exp(-inf) x
/// -inf is NaN; in double it is finite, its exp 0, and its term 0, as in the limit.
inline void sum_keys(const float* row, const uint8_t* see, int64_t begin, int64_t end, RowSums& r) {
  for (int64_t k = begin; k < end; ++k) {
    if (key_hidden(row, see, k)) continue;
    const double d = static_cast<double>(row[k]) - r.max;
    const float e = std::exp(static_cast<float>(d));
    r.z += e;
    r.s += static_cast<double>(e) * d;
  }
}

inline RowSums row_sums_scalar(const float* row, const uint8_t* see, int64_t keys) {
  RowSums r;
  scan_keys(row, see, 0, keys, r);
  if (r.visible > 0 && !r.nonfinite) sum_keys(row, see, 0, keys, r);
  return r;
}

/// Only valid when avx2_available() (AVX2 and FMA).
RowSums row_sums_avx2(const float* row, const uint8_t* see, int64_t keys);

}  // namespace gradscope::internal
