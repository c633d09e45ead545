// AVX2 kernels for f32, f16 and bf16: 8 floats per step, sums widened to double lanes.
// Compiled with -mavx2 -mfma -mf16c and only called after a runtime CPU check.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "stats/internal/kernels.h"

namespace gradscope::internal {
namespace {

struct LoadF32 {
  static constexpr int kBytes = 4;
  __m256 operator()(const unsigned char* p) const {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
  }
};
struct LoadF16 {
  static constexpr int kBytes = 2;
  __m256 operator()(const unsigned char* p) const {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};
struct LoadBF16 {
  static constexpr int kBytes = 2;
  __m256 operator()(const unsigned char* p) const {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
};

double hsum(__m256d v) {
  alignas(32) double d[4];
  _mm256_store_pd(d, v);
  return (d[0] + d[1]) + (d[2] + d[3]);
}

int64_t hsum_counts(__m256i v) {
  alignas(32) int32_t c[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(c), v);
  int64_t total = 0;
  for (int32_t x : c) total += x;
  return total;
}

// Elements per block. Each block first runs the fast loop, which assumes every value is
// finite; NaN or Inf anywhere in the block turns its double sums non-finite (NaN and Inf
// propagate through + and fma, and finite floats cannot overflow a double sum), and only
// then is the block redone with the masked loop. Blocks also bound the 32-bit lane counters.
constexpr int64_t kBlock = 4096;

struct Lanes {
  __m256d sum0, sum1, sq0, sq1, ab0, ab1;
  __m256i zero, sat;
};

inline Lanes zero_lanes() {
  const __m256d z = _mm256_setzero_pd();
  const __m256i zi = _mm256_setzero_si256();
  return {z, z, z, z, z, z, zi, zi};
}

// Widens 8 floats to double and adds x, x^2 and |x| into the lanes.
inline void add_sums(Lanes& l, __m256 x, __m256d sign_d) {
  const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(x));
  const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1));
  l.sum0 = _mm256_add_pd(l.sum0, lo);
  l.sum1 = _mm256_add_pd(l.sum1, hi);
  l.sq0 = _mm256_fmadd_pd(lo, lo, l.sq0);
  l.sq1 = _mm256_fmadd_pd(hi, hi, l.sq1);
  l.ab0 = _mm256_add_pd(l.ab0, _mm256_andnot_pd(sign_d, lo));
  l.ab1 = _mm256_add_pd(l.ab1, _mm256_andnot_pd(sign_d, hi));
}

// A true mask lane is -1 as an integer, so subtracting it counts.
inline __m256i count(__m256i counter, __m256 mask) {
  return _mm256_sub_epi32(counter, _mm256_castps_si256(mask));
}

template <class Load>
void avx2_kernel(const void* data, int64_t n, const KernelParams& kp, Stats& acc) {
  const Load load;
  const auto* p = static_cast<const unsigned char*>(data);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256d sign_d = _mm256_set1_pd(-0.0);
  const __m256 flt_max = _mm256_set1_ps(std::numeric_limits<float>::max());
  const __m256 pos_inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256 eps = _mm256_set1_ps(kp.dead_eps_f);
  const __m256 sat = _mm256_set1_ps(kp.saturation_f);

  __m256 mn = pos_inf, mx = neg_inf;  // over finite values, across blocks
  Stats part;
  const int64_t vec_end = n / 8 * 8;
  for (int64_t begin = 0; begin < vec_end; begin += kBlock) {
    const int64_t end = std::min(vec_end, begin + kBlock);
    Lanes l = zero_lanes();
    __m256 bmn = mn, bmx = mx;
    for (int64_t i = begin; i < end; i += 8) {
      const __m256 v = load(p + i * Load::kBytes);
      const __m256 a = _mm256_andnot_ps(sign, v);
      l.zero = count(l.zero, _mm256_cmp_ps(a, eps, _CMP_LE_OQ));
      l.sat = count(l.sat, _mm256_cmp_ps(a, sat, _CMP_GT_OQ));
      bmn = _mm256_min_ps(bmn, v);
      bmx = _mm256_max_ps(bmx, v);
      add_sums(l, v, sign_d);
    }
    __m256i fin = _mm256_set1_epi32(static_cast<int32_t>((end - begin) / 8));
    __m256i nan = _mm256_setzero_si256(), pinf = nan;
    const __m256d probe = _mm256_add_pd(_mm256_add_pd(l.sum0, l.sum1), _mm256_add_pd(l.sq0, l.sq1));
    if (!std::isfinite(hsum(probe))) {
      // Rare: this block holds NaN or Inf. Redo it, masking non-finite values out.
      l = zero_lanes();
      bmn = mn;
      bmx = mx;
      fin = _mm256_setzero_si256();
      for (int64_t i = begin; i < end; i += 8) {
        const __m256 v = load(p + i * Load::kBytes);
        const __m256 a = _mm256_andnot_ps(sign, v);
        const __m256 is_fin = _mm256_cmp_ps(a, flt_max, _CMP_LE_OQ);  // false for NaN and Inf
        fin = count(fin, is_fin);
        nan = count(nan, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        pinf = count(pinf, _mm256_cmp_ps(v, pos_inf, _CMP_EQ_OQ));
        l.zero = count(l.zero, _mm256_cmp_ps(a, eps, _CMP_LE_OQ));
        l.sat = count(l.sat, _mm256_and_ps(_mm256_cmp_ps(a, sat, _CMP_GT_OQ), is_fin));
        bmn = _mm256_min_ps(bmn, _mm256_blendv_ps(pos_inf, v, is_fin));
        bmx = _mm256_max_ps(bmx, _mm256_blendv_ps(neg_inf, v, is_fin));
        add_sums(l, _mm256_and_ps(v, is_fin), sign_d);
      }
    }
    mn = bmn;
    mx = bmx;
    Stats block;
    block.count = end - begin;
    block.finite = hsum_counts(fin);
    block.nan = hsum_counts(nan);
    block.pos_inf = hsum_counts(pinf);
    block.neg_inf = block.count - block.finite - block.nan - block.pos_inf;
    block.zero = hsum_counts(l.zero);
    block.saturated = hsum_counts(l.sat);
    block.sum = hsum(_mm256_add_pd(l.sum0, l.sum1));
    block.sum_sq = hsum(_mm256_add_pd(l.sq0, l.sq1));
    block.sum_abs = hsum(_mm256_add_pd(l.ab0, l.ab1));
    part = merge(part, block);
  }

  alignas(32) float lane_min[8], lane_max[8];
  _mm256_store_ps(lane_min, mn);
  _mm256_store_ps(lane_max, mx);
  for (int i = 0; i < 8; ++i) {
    part.min = std::min<double>(part.min, lane_min[i]);
    part.max = std::max<double>(part.max, lane_max[i]);
  }
  if (part.finite) part.max_abs = std::max(std::fabs(part.min), std::fabs(part.max));
  acc = merge(acc, part);

  // The last n % 8 elements go through the portable kernel.
  if (vec_end < n) {
    const KernelTable& scalar = scalar_kernels();
    const ContiguousKernel tail = Load::kBytes == 4 ? scalar.f32
                                  : std::is_same<Load, LoadF16>::value ? scalar.f16
                                                                      : scalar.bf16;
    tail(p + vec_end * Load::kBytes, n - vec_end, kp, acc);
  }
}

}  // namespace

const KernelTable& avx2_kernels() {
  static const KernelTable table{avx2_kernel<LoadF32>, scalar_kernels().f64,
                                 avx2_kernel<LoadF16>, avx2_kernel<LoadBF16>};
  return table;
}

}  // namespace gradscope::internal
