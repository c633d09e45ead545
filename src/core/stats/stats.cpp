#include "gradscope/core/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <thread>
#include <vector>

#include "gradscope/core/error.h"
#include "stats/internal/kernels.h"


namespace gradscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Below this many elements per thread, starting a thread costs more than it saves.
constexpr int64_t kMinElementsPerThread = int64_t{1} << 18;
// Strided elements are gathered into a buffer of this many elements, then run contiguously.
constexpr int64_t kGatherElements = 4096;

// Runs the kernel over logical elements [begin, end) of a strided view, in row-major order.
void run_strided(const TensorView& view, int64_t begin, int64_t end,
                 internal::ContiguousKernel kernel, const internal::KernelParams& kp, Stats& acc) {
  const auto& shape = view.shape();
  const auto& strides = view.strides();
  const std::size_t dims = shape.size();
  const std::size_t esize = dtype_size(view.dtype());
  const auto* base = static_cast<const unsigned char*>(view.data());

  // Unravel `begin` into a multi-index and an element offset.
  std::vector<int64_t> index(dims, 0);
  int64_t offset = 0;
  for (std::size_t d = dims, rest = static_cast<std::size_t>(begin); d-- > 0;) {
    index[d] = static_cast<int64_t>(rest) % shape[d];
    rest /= static_cast<std::size_t>(shape[d]);
    offset += index[d] * strides[d];
  }
  const int64_t inner = dims ? shape[dims - 1] : 1;
  const int64_t inner_stride = dims ? strides[dims - 1] : 1;

  std::vector<unsigned char> buffer(static_cast<std::size_t>(kGatherElements) * esize);
  int64_t buffered = 0;
  auto flush = [&] {
    if (buffered) kernel(buffer.data(), buffered, kp, acc);
    buffered = 0;
  };

  for (int64_t pos = begin; pos < end;) {
    // The rest of the current innermost row, clipped to the range.
    const int64_t run = std::min(inner - (dims ? index[dims - 1] : 0), end - pos);
    if (inner_stride == 1 && run >= 64) {
      kernel(base + offset * static_cast<int64_t>(esize), run, kp, acc);
    } else {
      for (int64_t i = 0; i < run; ++i) {
        std::memcpy(buffer.data() + buffered * esize,
                    base + (offset + i * inner_stride) * static_cast<int64_t>(esize), esize);
        if (++buffered == kGatherElements) flush();
      }
    }
    pos += run;
    // Advance the multi-index by `run` elements (to the start of the next row).
    if (dims == 0) break;
    offset += run * inner_stride;
    index[dims - 1] += run;
    for (std::size_t d = dims - 1; d > 0 && index[d] == shape[d]; --d) {
      offset -= index[d] * strides[d];
      index[d] = 0;
      ++index[d - 1];
      offset += strides[d - 1];
    }
  }
  flush();
}

void run_range(const TensorView& view, int64_t begin, int64_t end,
               internal::ContiguousKernel kernel, const internal::KernelParams& kp, Stats& acc) {
  if (begin >= end) return;
  if (view.is_contiguous()) {
    const auto* base = static_cast<const unsigned char*>(view.data());
    kernel(base + begin * static_cast<int64_t>(dtype_size(view.dtype())), end - begin, kp, acc);
  } else {
    run_strided(view, begin, end, kernel, kp, acc);
  }
}

}  // namespace

namespace internal {

void check_options(const StatsOptions& options, const std::string& name) {
  if (!(options.dead_eps >= 0) || !std::isfinite(options.dead_eps))
    throw Error("tensor '" + name + "': dead_eps must be finite and >= 0");
  if (!(options.saturation >= 0) || !std::isfinite(options.saturation))
    throw Error("tensor '" + name + "': saturation must be finite and >= 0");
  if (options.threads < 1)
    throw Error("tensor '" + name + "': threads must be >= 1, got " + std::to_string(options.threads));
}

const KernelTable& kernels(Kernel kernel, std::string_view who) {
#if defined(GRADSCOPE_HAVE_AVX2_KERNELS)
  if (resolve_kernel(kernel, who) == Kernel::kAvx2) return avx2_kernels();
#else
  resolve_kernel(kernel, who);  // kAvx2 is an error here as on any CPU without it
#endif
  return scalar_kernels();
}

std::vector<Range> split_ranges(int64_t n, int max_threads) {
  const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(max_threads, n / kMinElementsPerThread));
  // Equal chunks rounded up to whole vectors; the last one ends at n.
  const int64_t chunk = ((n + threads - 1) / threads + 63) / 64 * 64;
  std::vector<Range> ranges;
  for (int64_t t = 0; t < threads; ++t)
    ranges.push_back({std::min(n, t * chunk), t + 1 == threads ? n : std::min(n, (t + 1) * chunk)});
  return ranges;
}

void run_ranges(const std::vector<Range>& ranges, const std::function<void(std::size_t, const Range&)>& run) {
  // The calling thread takes the first range.
  std::vector<std::thread> workers;
  for (std::size_t t = 1; t < ranges.size(); ++t) workers.emplace_back([&, t] { run(t, ranges[t]); });
  if (!ranges.empty()) run(0, ranges[0]);
  for (auto& w : workers) w.join();
}

Stats parallel_ranges(int64_t n, int max_threads, const std::function<void(int64_t, int64_t, Stats&)>& run) {
  const std::vector<Range> ranges = split_ranges(n, max_threads);
  std::vector<Stats> parts(ranges.size());
  run_ranges(ranges, [&](std::size_t t, const Range& r) { run(r.begin, r.end, parts[t]); });
  Stats acc;
  for (const Stats& p : parts) acc = merge(acc, p);
  return acc;
}

}  // namespace internal

Stats compute(const TensorView& view, const StatsOptions& options) {
  internal::check_options(options, view.name());
  const internal::ContiguousKernel kernel = internal::kernels(options.kernel, "stats").for_dtype(view.dtype());
  const internal::KernelParams kp = internal::make_kernel_params(options.dead_eps, options.saturation);
  return internal::parallel_ranges(view.numel(), options.threads, [&](int64_t begin, int64_t end, Stats& acc) {
    run_range(view, begin, end, kernel, kp, acc);
  });
}

int64_t Stats::inf() const { return add_counts(pos_inf, neg_inf); }

// Counts saturate (add_counts): those read from a damaged run file can be anything.
Stats merge(const Stats& a, const Stats& b) { return merge_fields<kStatsFields>(a, b); }

double Stats::mean() const { return finite ? sum / static_cast<double>(finite) : kNaN; }
double Stats::mean_abs() const { return finite ? sum_abs / static_cast<double>(finite) : kNaN; }

double Stats::variance() const {
  if (!finite) return kNaN;
  // E[x^2] - E[x]^2 in double: relative error about 1e-16 * (mean/std)^2, negligible for the
  // activations and gradients this describes; clamped because rounding can go below zero.
  const double m = mean();
  return std::max(0.0, sum_sq / static_cast<double>(finite) - m * m);
}

double Stats::stddev() const { return std::sqrt(variance()); }
double Stats::l2() const { return count ? std::sqrt(sum_sq) : kNaN; }

double Stats::frac_nan() const { return count ? static_cast<double>(nan) / count : kNaN; }
double Stats::frac_inf() const { return count ? static_cast<double>(inf()) / count : kNaN; }
double Stats::frac_zero() const { return count ? static_cast<double>(zero) / count : kNaN; }
double Stats::frac_saturated() const {
  return count ? static_cast<double>(saturated) / count : kNaN;
}

}  // namespace gradscope
