// Passes over a tensor and a second buffer: stats while copying (a snapshot in the same read),
// and stats of an element-wise difference without materialising it (a parameter update).
#include <cstring>

#include "gradscope/core/error.h"
#include "gradscope/core/stats/half.h"
#include "gradscope/core/stats/stats.h"
#include "stats/internal/kernels.h"

namespace gradscope {
namespace {

// Elements per block: small enough that a block stays in L1/L2 between its two uses.
constexpr int64_t kBlock = 4096;

void require_contiguous(const TensorView& v, const char* what) {
  if (!v.is_contiguous()) throw Error("tensor '" + v.name() + "': " + what + " needs a contiguous tensor");
}

template <class T, class ToFloat>
void difference_block(const void* a, const void* b, int64_t begin, int64_t len, float* out, ToFloat to_float) {
  const T* pa = static_cast<const T*>(a) + begin;
  const T* pb = static_cast<const T*>(b) + begin;
  for (int64_t i = 0; i < len; ++i) out[i] = to_float(pa[i]) - to_float(pb[i]);
}

}  // namespace

Stats compute_and_copy(const TensorView& view, void* out, const StatsOptions& options) {
  internal::check_options(options, view.name());
  require_contiguous(view, "compute_and_copy");
  if (view.numel() > 0 && out == nullptr) throw Error("tensor '" + view.name() + "': null copy destination");
  const internal::ContiguousKernel kernel = internal::kernels(options.kernel, "stats").for_dtype(view.dtype());
  const internal::KernelParams kp = internal::make_kernel_params(options.dead_eps, options.saturation);
  const auto esize = static_cast<int64_t>(dtype_size(view.dtype()));
  const auto* src = static_cast<const unsigned char*>(view.data());
  auto* dst = static_cast<unsigned char*>(out);
  return internal::parallel_ranges(view.numel(), options.threads, [&](int64_t begin, int64_t end, Stats& acc) {
    for (int64_t b = begin; b < end; b += kBlock) {
      const int64_t len = std::min(kBlock, end - b);
      std::memcpy(dst + b * esize, src + b * esize, static_cast<std::size_t>(len * esize));
      kernel(dst + b * esize, len, kp, acc);  // reads the copy while it is still in cache
    }
  });
}

Stats compute_difference(const TensorView& a, const TensorView& b, const StatsOptions& options) {
  internal::check_options(options, a.name());
  require_contiguous(a, "compute_difference");
  require_contiguous(b, "compute_difference");
  if (a.dtype() != b.dtype() || a.numel() != b.numel())
    throw Error("tensor '" + a.name() + "': difference with '" + b.name() + "' needs the same dtype and size");
  const internal::KernelParams kp = internal::make_kernel_params(options.dead_eps, options.saturation);
  const internal::KernelTable& table = internal::kernels(options.kernel, "stats");
  return internal::parallel_ranges(a.numel(), options.threads, [&](int64_t begin, int64_t end, Stats& acc) {
    // float32 holds a difference of two halves or bfloat16s exactly in range and nearly
    // always exactly in value; float64 differences stay in double.
    float fbuf[kBlock];
    double dbuf[kBlock];
    for (int64_t blk = begin; blk < end; blk += kBlock) {
      const int64_t len = std::min(kBlock, end - blk);
      switch (a.dtype()) {
        case DType::kFloat32:
          difference_block<float>(a.data(), b.data(), blk, len, fbuf, [](float x) { return x; });
          break;
        case DType::kFloat16:
          difference_block<uint16_t>(a.data(), b.data(), blk, len, fbuf, half_to_float);
          break;
        case DType::kBFloat16:
          difference_block<uint16_t>(a.data(), b.data(), blk, len, fbuf, bfloat16_to_float);
          break;
        case DType::kFloat64: {
          const double* pa = static_cast<const double*>(a.data()) + blk;
          const double* pb = static_cast<const double*>(b.data()) + blk;
          for (int64_t i = 0; i < len; ++i) dbuf[i] = pa[i] - pb[i];
          table.f64(dbuf, len, kp, acc);
          continue;
        }
      }
      table.f32(fbuf, len, kp, acc);
    }
  });
}

}  // namespace gradscope
