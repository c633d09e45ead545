// The ATen path of the statistics: every field of the fused CPU kernel, as ATen reductions
// on the tensor's own device, stacked into one small [rows, kFields] double tensor.
#include "aten_stats.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>

#include "gradscope/core/error.h"
#include "gradscope/core/stats/scaled.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch::internal {
namespace {

bool forced_by_environment() {
  const char* v = std::getenv("GRADSCOPE_FORCE_ATEN_STATS");
  return v && *v && std::strcmp(v, "0") != 0;
}

std::atomic<bool>& forced() {
  static std::atomic<bool> on{forced_by_environment()};
  return on;
}

// Column order of the stacked result. count is known on the host, so finite is count minus
// the non-finite counts; max |x| is max(0, -min, max) on the host. min and max come last:
// merge() adds every column before them.
enum Field { kNaN, kPosInf, kNegInf, kZeroOrNotFinite, kSaturated, kSum, kSumSq, kSumAbs, kMin, kMax, kFields };

std::atomic<std::size_t>& all_copies() {
  static std::atomic<std::size_t> copies{0};
  return copies;
}

std::atomic<int64_t>& chunk_limit() {
  static std::atomic<int64_t> elements{0};
  return elements;
}

// The fields of each row of `d`, a [rows, m] double tensor this path owns (modified in place).
// Everything is taken in double, as the fused kernel does: widening f32/f16/bf16 is exact,
// so are the squares of f32 values, and every threshold compares exactly as on the CPU (a
// float comparison would round dead_eps and saturation to the tensor's precision). Only the
// order of the double additions differs between the paths. Working in place on `d` leaves one
// boolean mask and its int32 cast (a sum with a dtype casts its input first) as the only
// other temporaries: kTempBytesPerElement.
at::Tensor fields_of(at::Tensor d, const StatsOptions& o) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  // int32 is exact: a chunk holds fewer than 2^31 elements (aten_stats_chunk_elements).
  auto count = [](const at::Tensor& mask) { return mask.sum({1}, false, at::kInt).to(at::kDouble); };
  std::vector<at::Tensor> f(kFields);
  f[kNaN] = count(at::isnan(d));
  f[kPosInf] = count(at::isposinf(d));
  f[kNegInf] = count(at::isneginf(d));
  // No mask for the finite values: every non-finite value becomes +Inf for min, then -Inf for
  // max, then 0 for the sums (a value that is already finite is never changed). A row with no
  // finite value gets min +Inf and max -Inf, as Stats. One at::aminmax cannot replace the two:
  // no single fill value leaves both the min and the max of the finite values unchanged.
  d.nan_to_num_(kInf, kInf, kInf);
  f[kMin] = d.amin({1});
  d.nan_to_num_(0.0, -kInf, -kInf);
  f[kMax] = d.amax({1});
  d.nan_to_num_(0.0, 0.0, 0.0);
  f[kSum] = d.sum({1});
  d.abs_();
  f[kSumAbs] = d.sum({1});
  // |x| <= dead_eps over the zeroed magnitudes also counts every non-finite value (0 there,
  // and dead_eps >= 0); resolve() takes those out on the host.
  f[kZeroOrNotFinite] = count(d.le(o.dead_eps));
  f[kSaturated] = count(d.gt(o.saturation));  // non-finite values are 0 here, never above it
  d.square_();  // |x|^2 == x^2, bit for bit
  f[kSumSq] = d.sum({1});
  return at::stack(f, 1);
}

// A double copy of `piece` (any strides) viewed as [rows, numel / rows]: copy_ reads the
// strides and widens in one pass, so a non-contiguous piece costs no extra temporary.
at::Tensor owned_double(const at::Tensor& piece, int64_t rows) {
  at::Tensor d = at::empty(piece.sizes(), at::TensorOptions().dtype(at::kDouble).device(piece.device()));
  d.copy_(piece);
  return d.view({rows, -1});
}

// Calls visit on pieces of `x` of at most n elements that together cover it once: slices of
// its flat view when it is contiguous, else runs of whole slices along dim 0 (or each slice
// on its own, split further, when one is larger than n). No piece is copied here.
void for_each_piece(const at::Tensor& x, int64_t n, const std::function<void(const at::Tensor&)>& visit) {
  const int64_t numel = x.numel();
  if (numel <= n) return visit(x);
  if (x.is_contiguous()) {
    const at::Tensor flat = x.view({-1});
    for (int64_t i = 0; i < numel; i += n) visit(flat.narrow(0, i, std::min(n, numel - i)));
    return;
  }
  const int64_t outer = x.size(0), inner = numel / outer;
  if (inner > n) {
    for (int64_t i = 0; i < outer; ++i) for_each_piece(x.select(0, i), n, visit);
    return;
  }
  const int64_t step = n / inner;
  for (int64_t i = 0; i < outer; i += step) visit(x.narrow(0, i, std::min(step, outer - i)));
}

// Per-chunk [k, kFields] results of one summary merged on the device into [1, kFields]: the
// counts and sums add, min and max combine (Stats' merge, as ATen ops).
at::Tensor merge(const std::vector<at::Tensor>& parts) {
  if (parts.size() == 1) return parts.front();
  const at::Tensor all = at::cat(parts, 0);
  return at::cat({all.narrow(1, 0, kMin).sum(0, true), all.narrow(1, kMin, 1).amin(0, true),
                  all.narrow(1, kMax, 1).amax(0, true)},
                 1);
}

// One [1, kFields] summary of the whole of `x`, reduced n elements at a time.
at::Tensor whole_fields(const at::Tensor& x, int64_t n, const StatsOptions& o) {
  std::vector<at::Tensor> parts;
  for_each_piece(x, n, [&](const at::Tensor& piece) { parts.push_back(fields_of(owned_double(piece, 1), o)); });
  return merge(parts);
}

// One [C, kFields] summary per slice of `x` along dim 0: runs of whole slices at most n
// elements together, or each slice in chunks when one is larger.
at::Tensor row_fields(const at::Tensor& x, int64_t n, const StatsOptions& o) {
  const int64_t channels = x.size(0), per_row = x.numel() / channels;
  std::vector<at::Tensor> parts;
  if (per_row > n) {
    for (int64_t c = 0; c < channels; ++c) parts.push_back(whole_fields(x.select(0, c), n, o));
  } else {
    const int64_t step = n / per_row;
    for (int64_t c = 0; c < channels; c += step) {
      const int64_t rows = std::min(step, channels - c);
      parts.push_back(fields_of(owned_double(x.narrow(0, c, rows), rows), o));
    }
  }
  return parts.size() == 1 ? parts.front() : at::cat(parts, 0);
}

// The fused kernel's own option checks and messages: a pass over no elements runs only them.
void check_options(const StatsOptions& options, const std::string& name) {
  compute(TensorView::contiguous(nullptr, DType::kFloat32, {0}, name), options);
}

}  // namespace

bool use_aten_stats(const at::Tensor& tensor) {
  return !tensor.device().is_cpu() || forced().load(std::memory_order_relaxed);
}

void force_aten_stats(bool on) { forced().store(on); }
bool aten_stats_forced() { return forced().load(); }

std::size_t aten_stats_budget(const at::Tensor& tensor) {
  const std::size_t own = static_cast<std::size_t>(tensor.numel()) * tensor.element_size();
  return std::min(kAtenStatsMaxBudget, std::max(kAtenStatsMinBudget, own));
}

int64_t aten_stats_chunk_elements(const at::Tensor& tensor) {
  const int64_t limit = chunk_limit().load(std::memory_order_relaxed);
  const auto budget = static_cast<int64_t>(aten_stats_budget(tensor) / kTempBytesPerElement);
  return limit > 0 ? std::min(limit, budget) : budget;
}

void set_aten_stats_chunk_limit(int64_t elements) { chunk_limit().store(std::max<int64_t>(elements, 0)); }

AtenStatsBatch::AtenStatsBatch(StatsOptions options) : options_(options) {}

void AtenStatsBatch::queue(const at::Tensor& fields) {
  const std::size_t first = counts_.size() - static_cast<std::size_t>(fields.size(0));
  for (Group& g : groups_) {
    if (g.device != fields.device()) continue;
    g.parts.push_back(fields);
    g.first.push_back(first);
    return;
  }
  groups_.push_back(Group{fields.device(), {fields}, {first}});
}

std::size_t AtenStatsBatch::add(const at::Tensor& tensor, const std::string& name, double threshold_scale) {
  check_dense_float(tensor, name);
  const StatsOptions options = threshold_scale == 1 ? options_ : scaled_thresholds(options_, threshold_scale);
  check_options(options, name);
  const std::size_t index = counts_.size();
  counts_.push_back(tensor.numel());
  // Nothing to reduce: min/max of no element would throw, and Stats{} with count 0 is the answer.
  if (tensor.numel() > 0) queue(whole_fields(tensor.detach(), aten_stats_chunk_elements(tensor), options));
  return index;
}

std::size_t AtenStatsBatch::add_slices(const at::Tensor& tensor, int64_t dim, const std::string& name,
                                       double threshold_scale) {
  check_dense_float(tensor, name);
  const StatsOptions options = threshold_scale == 1 ? options_ : scaled_thresholds(options_, threshold_scale);
  check_options(options, name);
  const int64_t d = dim < 0 ? dim + tensor.dim() : dim;
  if (d < 0 || d >= tensor.dim())
    throw Error("tensor '" + name + "': channel dim " + std::to_string(dim) + " out of range for a tensor with " +
                std::to_string(tensor.dim()) + " dims");
  const std::size_t index = counts_.size();
  const int64_t channels = tensor.size(d);
  const int64_t per_row = channels ? tensor.numel() / channels : 0;
  counts_.insert(counts_.end(), static_cast<std::size_t>(channels), per_row);
  // movedim is a view: each run of channels is copied (to double) only when it is reduced.
  if (channels > 0 && per_row > 0)
    queue(row_fields(tensor.detach().movedim(d, 0), aten_stats_chunk_elements(tensor), options));
  return index;
}

std::vector<Stats> AtenStatsBatch::resolve() {
  std::vector<Stats> out(counts_.size());
  for (std::size_t i = 0; i < counts_.size(); ++i) out[i].count = counts_[i];
  for (const Group& g : groups_) {
    // The one device-to-host copy of this device's results (a no-op on the CPU).
    const at::Tensor host = at::cat(g.parts, 0).to(at::kCPU).contiguous();
    ++copies_;
    all_copies().fetch_add(1, std::memory_order_relaxed);
    const double* p = host.data_ptr<double>();
    for (std::size_t part = 0; part < g.parts.size(); ++part) {
      for (int64_t r = 0; r < g.parts[part].size(0); ++r, p += kFields) {
        Stats& s = out[g.first[part] + static_cast<std::size_t>(r)];
        // Counts summed in double are exact below 2^53 elements.
        s.nan = static_cast<int64_t>(p[kNaN]);
        s.pos_inf = static_cast<int64_t>(p[kPosInf]);
        s.neg_inf = static_cast<int64_t>(p[kNegInf]);
        s.finite = s.count - s.nan - s.pos_inf - s.neg_inf;
        s.zero = static_cast<int64_t>(p[kZeroOrNotFinite]) - (s.count - s.finite);
        s.saturated = static_cast<int64_t>(p[kSaturated]);
        s.sum = p[kSum];
        s.sum_sq = p[kSumSq];
        s.sum_abs = p[kSumAbs];
        s.min = p[kMin];
        s.max = p[kMax];
        // Exactly the largest finite |x| (0 when there is none: min +Inf, max -Inf).
        s.max_abs = std::max({0.0, -s.min, s.max});
      }
    }
  }
  counts_.clear();
  groups_.clear();
  return out;
}

std::size_t aten_stats_copies() { return all_copies().load(); }

Stats aten_stats(const at::Tensor& tensor, const std::string& name, const StatsOptions& options) {
  AtenStatsBatch batch(options);
  batch.add(tensor, name);
  return batch.resolve().front();
}

}  // namespace gradscope::torch::internal
