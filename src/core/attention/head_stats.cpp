#include "gradscope/core/attention/head_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gradscope/core/error.h"
#include "attention/internal/row_sums.h"

namespace gradscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using RowSumsFn = internal::RowSums (*)(const float*, const uint8_t*, int64_t);

RowSumsFn row_sums_for(Kernel kernel) {
#if defined(GRADSCOPE_HAVE_AVX2_KERNELS)
  if (resolve_kernel(kernel, "attention logits") == Kernel::kAvx2) return internal::row_sums_avx2;
#else
  resolve_kernel(kernel, "attention logits");  // kAvx2 is an error here as on any CPU without it
#endif
  return internal::row_sums_scalar;
}

// One query row's sums into `h`; log_of[n] = log(n) for n up to the keys. z >= 1 (the largest
// key contributes exp(0)); rounding can make the entropy a hair negative.
void add_row(const internal::RowSums& r, const std::vector<double>& log_of, HeadStats& h) {
  if (r.visible == 0) return;
  if (r.nonfinite) {
    ++h.nonfinite_queries;
    return;
  }
  const double entropy = std::max(0.0, std::log(r.z) - r.s / r.z);
  h.max_logit = h.queries == 0 ? r.max : std::max(h.max_logit, static_cast<double>(r.max));
  ++h.queries;
  h.entropy_sum += entropy;
  if (r.visible >= 2) {
    ++h.fraction_queries;
    h.entropy_fraction_sum += std::min(1.0, entropy / log_of[static_cast<std::size_t>(r.visible)]);
  }
  if (1.0 / r.z > kTopWeight) ++h.top_queries;
}

}  // namespace

double HeadStats::mean_entropy() const { return queries ? entropy_sum / queries : kNaN; }

double HeadStats::mean_entropy_fraction() const {
  return fraction_queries ? entropy_fraction_sum / fraction_queries : kNaN;
}

double HeadStats::top_fraction() const {
  return queries ? static_cast<double>(top_queries) / queries : kNaN;
}

HeadStats merge(const HeadStats& a, const HeadStats& b) { return merge_fields<kHeadStatsFields>(a, b); }

std::vector<HeadStats> attention_head_stats(const float* logits, const AttentionShape& shape, const uint8_t* visible,
                                            Kernel kernel) {
  if (shape.batch < 0 || shape.heads < 0 || shape.queries < 0 || shape.keys < 0)
    throw Error("attention logits: dimensions must be >= 0");
  std::vector<HeadStats> heads(static_cast<std::size_t>(shape.heads));
  const int64_t rows = shape.batch * shape.heads * shape.queries;
  if (rows == 0 || shape.keys == 0) return heads;
  if (logits == nullptr) throw Error("attention logits: null data");
  const RowSumsFn row_sums = row_sums_for(kernel);
  // log(keys seen) for every count a row can have, once a call instead of once a row.
  std::vector<double> log_of(static_cast<std::size_t>(shape.keys) + 1);
  for (std::size_t n = 1; n < log_of.size(); ++n) log_of[n] = std::log(static_cast<double>(n));
  const float* p = logits;
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t h = 0; h < shape.heads; ++h)
      for (int64_t q = 0; q < shape.queries; ++q, p += shape.keys)
        add_row(row_sums(p, visible ? visible + q * shape.keys : nullptr, shape.keys),
                log_of, heads[static_cast<std::size_t>(h)]);
  return heads;
}

}  // namespace gradscope
