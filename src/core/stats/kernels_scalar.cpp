// Portable kernels: one loop per dtype, values widened to double. Also the reference the
// AVX2 kernels are tested against, and the f64 kernel on every CPU.
#include <cmath>
#include <cstring>
#include <limits>

#include "gradscope/core/stats/half.h"
#include "stats/internal/kernels.h"

namespace gradscope::internal {
namespace {

struct LoadF32 {
  double operator()(const void* p, int64_t i) const { return static_cast<const float*>(p)[i]; }
};
struct LoadF64 {
  double operator()(const void* p, int64_t i) const { return static_cast<const double*>(p)[i]; }
};
struct LoadF16 {
  double operator()(const void* p, int64_t i) const {
    return half_to_float(static_cast<const uint16_t*>(p)[i]);
  }
};
struct LoadBF16 {
  double operator()(const void* p, int64_t i) const {
    return bfloat16_to_float(static_cast<const uint16_t*>(p)[i]);
  }
};

template <class Load>
void scalar_kernel(const void* data, int64_t n, const KernelParams& kp, Stats& acc) {
  const Load load;
  int64_t finite = 0, nan = 0, pos_inf = 0, zero = 0, saturated = 0;
  double sum = 0, sum_sq = 0, sum_abs = 0;
  double mn = std::numeric_limits<double>::infinity(), mx = -mn, max_abs = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double x = load(data, i);
    const double a = std::fabs(x);
    if (a <= kp.dead_eps) ++zero;
    if (std::isnan(x)) {
      ++nan;
    } else if (std::isinf(x)) {
      pos_inf += x > 0;
    } else {
      ++finite;
      saturated += a > kp.saturation;
      sum += x;
      sum_sq += x * x;
      sum_abs += a;
      mn = x < mn ? x : mn;
      mx = x > mx ? x : mx;
      max_abs = a > max_abs ? a : max_abs;
    }
  }
  Stats part;
  part.count = n;
  part.finite = finite;
  part.nan = nan;
  part.pos_inf = pos_inf;
  part.neg_inf = n - finite - nan - pos_inf;
  part.zero = zero;
  part.saturated = saturated;
  part.sum = sum;
  part.sum_sq = sum_sq;
  part.sum_abs = sum_abs;
  part.min = mn;
  part.max = mx;
  part.max_abs = max_abs;
  acc = merge(acc, part);
}

}  // namespace

KernelParams make_kernel_params(double dead_eps, double saturation) {
  // Largest float not above t: for any float f, f <= result  <=>  double(f) <= t,
  // and f > result  <=>  double(f) > t.
  auto floor_float = [](double t) {
    float f = static_cast<float>(t);
    if (static_cast<double>(f) > t) f = std::nextafter(f, -std::numeric_limits<float>::infinity());
    return f;
  };
  return KernelParams{dead_eps, saturation, floor_float(dead_eps), floor_float(saturation)};
}

ContiguousKernel KernelTable::for_dtype(DType dtype) const {
  switch (dtype) {
    case DType::kFloat32: return f32;
    case DType::kFloat64: return f64;
    case DType::kFloat16: return f16;
    case DType::kBFloat16: return bf16;
  }
  return nullptr;
}

const KernelTable& scalar_kernels() {
  static const KernelTable table{scalar_kernel<LoadF32>, scalar_kernel<LoadF64>,
                                 scalar_kernel<LoadF16>, scalar_kernel<LoadBF16>};
  return table;
}

}  // namespace gradscope::internal
