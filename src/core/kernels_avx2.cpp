// AVX2 kernels for f32, f16 and bf16: 8 floats per step, sums widened to double lanes.
// Compiled with -mavx2 -mfma -mf16c and only called after a runtime CPU check.
#include <immintrin.h>

#include <algorithm>
#include <limits>
#include <type_traits>

#include "internal/kernels.h"

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

// Counters are 32-bit lanes incremented at most once per step; flushing into 64-bit totals
// every kBlockSteps steps keeps them far from overflow.
constexpr int64_t kBlockSteps = int64_t{1} << 20;

template <class Load>
void avx2_kernel(const void* data, int64_t n, const KernelParams& kp, Stats& acc) {
  const Load load;
  const auto* p = static_cast<const unsigned char*>(data);
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 flt_max = _mm256_set1_ps(std::numeric_limits<float>::max());
  const __m256 pos_inf = _mm256_set1_ps(std::numeric_limits<float>::infinity());
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  const __m256 eps = _mm256_set1_ps(kp.dead_eps_f);
  const __m256 sat = _mm256_set1_ps(kp.saturation_f);

  __m256d sum0 = _mm256_setzero_pd(), sum1 = sum0, sq0 = sum0, sq1 = sum0, ab0 = sum0, ab1 = sum0;
  __m256 mn = pos_inf, mx = neg_inf, mxabs = _mm256_setzero_ps();
  int64_t finite = 0, nan = 0, pinf = 0, zero = 0, saturated = 0;

  const int64_t steps = n / 8;
  for (int64_t block = 0; block < steps; block += kBlockSteps) {
    const int64_t block_end = std::min(steps, block + kBlockSteps);
    __m256i c_fin = _mm256_setzero_si256(), c_nan = c_fin, c_pinf = c_fin, c_zero = c_fin,
            c_sat = c_fin;
    for (int64_t s = block; s < block_end; ++s) {
      const __m256 v = load(p + s * 8 * Load::kBytes);
      const __m256 a = _mm256_andnot_ps(sign, v);
      const __m256 fin = _mm256_cmp_ps(a, flt_max, _CMP_LE_OQ);  // false for NaN and Inf
      const __m256 is_nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
      const __m256 is_pinf = _mm256_cmp_ps(v, pos_inf, _CMP_EQ_OQ);
      const __m256 is_zero = _mm256_cmp_ps(a, eps, _CMP_LE_OQ);
      const __m256 is_sat = _mm256_and_ps(_mm256_cmp_ps(a, sat, _CMP_GT_OQ), fin);
      // A true mask lane is -1 as an integer, so subtracting it counts.
      c_fin = _mm256_sub_epi32(c_fin, _mm256_castps_si256(fin));
      c_nan = _mm256_sub_epi32(c_nan, _mm256_castps_si256(is_nan));
      c_pinf = _mm256_sub_epi32(c_pinf, _mm256_castps_si256(is_pinf));
      c_zero = _mm256_sub_epi32(c_zero, _mm256_castps_si256(is_zero));
      c_sat = _mm256_sub_epi32(c_sat, _mm256_castps_si256(is_sat));

      const __m256 xf = _mm256_and_ps(v, fin);
      const __m256 af = _mm256_and_ps(a, fin);
      mn = _mm256_min_ps(mn, _mm256_blendv_ps(pos_inf, v, fin));
      mx = _mm256_max_ps(mx, _mm256_blendv_ps(neg_inf, v, fin));
      mxabs = _mm256_max_ps(mxabs, af);

      const __m256d x_lo = _mm256_cvtps_pd(_mm256_castps256_ps128(xf));
      const __m256d x_hi = _mm256_cvtps_pd(_mm256_extractf128_ps(xf, 1));
      const __m256d a_lo = _mm256_cvtps_pd(_mm256_castps256_ps128(af));
      const __m256d a_hi = _mm256_cvtps_pd(_mm256_extractf128_ps(af, 1));
      sum0 = _mm256_add_pd(sum0, x_lo);
      sum1 = _mm256_add_pd(sum1, x_hi);
      sq0 = _mm256_fmadd_pd(x_lo, x_lo, sq0);
      sq1 = _mm256_fmadd_pd(x_hi, x_hi, sq1);
      ab0 = _mm256_add_pd(ab0, a_lo);
      ab1 = _mm256_add_pd(ab1, a_hi);
    }
    finite += hsum_counts(c_fin);
    nan += hsum_counts(c_nan);
    pinf += hsum_counts(c_pinf);
    zero += hsum_counts(c_zero);
    saturated += hsum_counts(c_sat);
  }

  alignas(32) float lane_min[8], lane_max[8], lane_abs[8];
  _mm256_store_ps(lane_min, mn);
  _mm256_store_ps(lane_max, mx);
  _mm256_store_ps(lane_abs, mxabs);
  Stats part;
  part.count = steps * 8;
  part.finite = finite;
  part.nan = nan;
  part.pos_inf = pinf;
  part.neg_inf = part.count - finite - nan - pinf;
  part.zero = zero;
  part.saturated = saturated;
  part.sum = hsum(_mm256_add_pd(sum0, sum1));
  part.sum_sq = hsum(_mm256_add_pd(sq0, sq1));
  part.sum_abs = hsum(_mm256_add_pd(ab0, ab1));
  for (int i = 0; i < 8; ++i) {
    part.min = std::min<double>(part.min, lane_min[i]);
    part.max = std::max<double>(part.max, lane_max[i]);
    part.max_abs = std::max<double>(part.max_abs, lane_abs[i]);
  }
  acc = merge(acc, part);

  // The last n % 8 elements go through the portable kernel.
  const int64_t done = steps * 8;
  if (done < n) {
    const KernelTable& scalar = scalar_kernels();
    const ContiguousKernel tail = Load::kBytes == 4 ? scalar.f32
                                  : std::is_same<Load, LoadF16>::value ? scalar.f16
                                                                      : scalar.bf16;
    tail(p + done * Load::kBytes, n - done, kp, acc);
  }
}

}  // namespace

const KernelTable& avx2_kernels() {
  static const KernelTable table{avx2_kernel<LoadF32>, scalar_kernels().f64,
                                 avx2_kernel<LoadF16>, avx2_kernel<LoadBF16>};
  return table;
}

}  // namespace gradscope::internal
