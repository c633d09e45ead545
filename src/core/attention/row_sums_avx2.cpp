// row_sums with AVX2 and FMA: eight keys at a time, exp by a polynomial instead of libm's
// scalar expf. Compiled with -mavx2 -mfma (src/core/CMakeLists.txt) and called only after
// avx2_available(), so the library still loads on CPUs without them.
#include <immintrin.h>

#include <cstring>

#include "attention/internal/row_sums.h"

namespace gradscope::internal {
namespace {

// exp(x) for x <= 0 (every x - max of a row), the classic range reduction of Cephes' expf
// (S. L. Moshier, Cephes Math Library, public): n = round(x log2 e), r = x - n ln 2 with ln 2
// split in two so r is exact, exp(r) by its degree-7 minimax polynomial (coefficients from
// Cephes expf.c; relative error about 1e-7, as float's own rounding), times 2^n through the
// exponent bits. Below -87.3 (2^-126, float's smallest normal) the result is 0.
__m256 exp_nonpositive(__m256 x) {
  const __m256 lowest = _mm256_set1_ps(-87.3365447f);
  const __m256 under = _mm256_cmp_ps(x, lowest, _CMP_LT_OQ);
  x = _mm256_max_ps(x, lowest);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.f)));
  // n in [-126, 0]: 2^n is the float with biased exponent n + 127 and no mantissa.
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(under, _mm256_mul_ps(y, _mm256_castsi256_ps(bits)));
}

// All ones in the lanes of keys k..k+7 that the query sees: not -inf, and nonzero in the mask.
__m256 visible_lanes(__m256 l, const uint8_t* see, int64_t k) {
  __m256 vis = _mm256_cmp_ps(l, _mm256_set1_ps(-std::numeric_limits<float>::infinity()), _CMP_NEQ_UQ);
  if (see) {
    uint64_t bytes;
    std::memcpy(&bytes, see + k, sizeof bytes);
    const __m256i wide = _mm256_cvtepu8_epi32(_mm_cvtsi64_si128(static_cast<long long>(bytes)));
    vis = _mm256_and_ps(vis, _mm256_castsi256_ps(_mm256_cmpgt_epi32(wide, _mm256_setzero_si256())));
  }
  return vis;
}

double sum_lanes(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  double total = 0;
  for (float f : lanes) total += f;
  return total;
}

float max_lanes(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  return *std::max_element(lanes, lanes + 8);
}

}  // namespace

RowSums row_sums_avx2(const float* row, const uint8_t* see, int64_t keys) {
  RowSums r;
  const int64_t whole = keys / 8 * 8;
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256 pos_inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  __m256 best = neg_inf, bad = _mm256_setzero_ps();
  for (int64_t k = 0; k < whole; k += 8) {
    const __m256 l = _mm256_loadu_ps(row + k);
    const __m256 vis = visible_lanes(l, see, k);
    const __m256 finite = _mm256_cmp_ps(l, pos_inf, _CMP_LT_OQ);  // false for NaN and +Inf
    bad = _mm256_or_ps(bad, _mm256_andnot_ps(finite, vis));
    best = _mm256_max_ps(best, _mm256_blendv_ps(neg_inf, l, _mm256_and_ps(vis, finite)));
    r.visible += __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(vis)));
  }
  r.nonfinite = _mm256_movemask_ps(bad) != 0;
  r.max = max_lanes(best);
  scan_keys(row, see, whole, keys, r);
  if (r.visible == 0 || r.nonfinite) return r;

  // Float lanes, added into the double sums every 32 vectors summed: the rounding of at most 32
  // float additions a lane, far below the 1e-5 the statistics are checked to.
  const __m256 m = _mm256_set1_ps(r.max);
  const __m256 lowest = _mm256_set1_ps(-std::numeric_limits<float>::max());
  __m256 z = _mm256_setzero_ps(), s = _mm256_setzero_ps();
  int added = 0;
  for (int64_t k = 0; k < whole; k += 8) {
    const __m256 l = _mm256_loadu_ps(row + k);
    const __m256 vis = visible_lanes(l, see, k);
    if (_mm256_movemask_ps(vis) == 0) continue;  // all hidden: half of a causal row
    // 0 where hidden (no -inf - m), and held at the lowest finite float: logits that span more
    // than FLT_MAX overflow l - m to -inf, whose term e x d would be 0 x -inf = NaN. Its exp is
    // 0 either way, so the held d changes no sum.
    const __m256 d = _mm256_max_ps(_mm256_and_ps(vis, _mm256_sub_ps(l, m)), lowest);
    const __m256 e = _mm256_and_ps(vis, exp_nonpositive(d));
    z = _mm256_add_ps(z, e);
    s = _mm256_fmadd_ps(e, d, s);
    if (++added == 32) {
      r.z += sum_lanes(z), r.s += sum_lanes(s);
      z = s = _mm256_setzero_ps();
      added = 0;
    }
  }
  r.z += sum_lanes(z), r.s += sum_lanes(s);
  sum_keys(row, see, whole, keys, r);
  return r;
}

}  // namespace gradscope::internal
