// Stats: a mergeable summary of one tensor, computed in one fused pass.
//
//   auto view = gradscope::TensorView::contiguous(g.data(), gradscope::DType::kFloat32, {n});
//   gradscope::Stats s = gradscope::compute(view);   // dead_eps 1e-7, saturation 50
//   double norm = s.l2();                        // over finite values
//   gradscope::Stats all = gradscope::merge(s, other);   // same as one pass over both
//
// Sums are accumulated in double, so merge() of chunk, step, thread or rank summaries equals
// one pass over all the data: exactly for counts, min and max, within rounding for sums.
#pragma once

#include <array>
#include <cstdint>
#include <limits>

#include "gradscope/core/record_field.h"
#include "gradscope/core/stats/kernel.h"
#include "gradscope/core/stats/tensor_view.h"

namespace gradscope {

/// What counts as zero and saturated, and how many threads share one tensor.
struct StatsOptions {
  double dead_eps = 1e-7;    ///< |x| <= dead_eps counts as zero
  double saturation = 50.0;  ///< finite |x| > saturation counts as saturated
  int threads = 1;           ///< threads for one tensor (large tensors only)
  Kernel kernel = Kernel::kAuto;  ///< resolve_kernel() (kernel.h) says what runs
};

/// Mergeable summary of tensor values. Value statistics cover finite values only.
struct Stats {
  int64_t count = 0;      ///< all elements
  int64_t finite = 0;     ///< neither NaN nor +-Inf
  int64_t nan = 0;
  int64_t pos_inf = 0;
  int64_t neg_inf = 0;
  int64_t zero = 0;       ///< |x| <= dead_eps
  int64_t saturated = 0;  ///< finite and |x| > saturation
  double sum = 0.0;       ///< of finite values
  double sum_sq = 0.0;
  double sum_abs = 0.0;
  double min = std::numeric_limits<double>::infinity();   ///< +Inf when no finite value
  double max = -std::numeric_limits<double>::infinity();  ///< -Inf when no finite value
  double max_abs = 0.0;

  bool has_finite() const { return finite > 0; }
  /// pos_inf + neg_inf (saturating, like merge()).
  int64_t inf() const;
  /// Mean of finite values; NaN when there is none (so is every derived value below).
  double mean() const;
  double mean_abs() const;
  /// Population variance (divides by the finite count).
  double variance() const;
  double stddev() const;
  /// L2 norm of the finite values (0 for an all-NaN tensor; NaN for an empty one).
  double l2() const;
  /// Fractions over all elements; NaN for an empty tensor.
  double frac_nan() const;
  double frac_inf() const;
  double frac_zero() const;
  double frac_saturated() const;
};

/// Every field of Stats, in declaration order, with how it merges: merge(), the run store
/// (io/store/internal/record_codec.cpp, which keeps count - finite) and the ranks' wire
/// (torch/distributed/wire.cpp) loop over it. A new field is a member above and its row here.
inline constexpr std::array<RecordField<Stats>, 13> kStatsFields = {
    count_field("count", &Stats::count),
    count_field("finite", &Stats::finite, &Stats::count),
    count_field("nan", &Stats::nan),
    count_field("pos_inf", &Stats::pos_inf),
    count_field("neg_inf", &Stats::neg_inf),
    count_field("zero", &Stats::zero),
    count_field("saturated", &Stats::saturated),
    real_field("sum", &Stats::sum),
    real_field("sum_sq", &Stats::sum_sq),
    real_field("sum_abs", &Stats::sum_abs),
    real_field("min", &Stats::min, FieldMerge::kMin),
    real_field("max", &Stats::max, FieldMerge::kMax),
    real_field("max_abs", &Stats::max_abs, FieldMerge::kMax),
};
static_assert(fields_cover<Stats>(kStatsFields), "a Stats member has no row in kStatsFields");

/// Summarises every element of `view` in one pass. Throws Error for an invalid view.
Stats compute(const TensorView& view, const StatsOptions& options = {});

/// One pass that also copies the elements to `out` (same dtype, `view.numel()` elements):
/// a snapshot and its statistics for the price of one read. Contiguous views only.
Stats compute_and_copy(const TensorView& view, void* out, const StatsOptions& options = {});

/// Statistics of the element-wise difference a - b (same dtype and size, contiguous) without
/// materialising it; f16/bf16 differences are taken in float32, f64 in double.
Stats compute_difference(const TensorView& a, const TensorView& b, const StatsOptions& options = {});

/// Combines two summaries; associative and commutative up to floating-point rounding of sums.
/// Counts saturate at the int64 limits (only a damaged run file gets near them).
Stats merge(const Stats& a, const Stats& b);

}  // namespace gradscope
