// The ATen path of the statistics: every field of the fused CPU kernel, as ATen reductions
// on the tensor's own device, stacked into one small [rows, kFields] double tensor.
#include "aten_stats.h"

#include <ATen/Functions.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "gradscope/core/error.h"
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

// Column order of the stacked result. count is known on the host; neg_inf is the rest.
enum Field { kFinite, kNaN, kPosInf, kZeroOrNotFinite, kSaturated, kSum, kSumSq, kSumAbs, kMin, kMax, kMaxAbs, kFields };

// The fields of `x` (rows == false: the whole tensor; true: each row of a 2-D tensor).
// Everything is taken in double, as the fused kernel does: widening f32/f16/bf16 is exact,
// so are the squares of f32 values, and every threshold compares exactly as on the CPU
// (a float comparison would round dead_eps and saturation to the tensor's precision). Only
// the order of the double additions differs between the paths.
at::Tensor fields_of(const at::Tensor& x, bool rows, const StatsOptions& o) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  auto sum = [&](const at::Tensor& t) { return rows ? t.sum({1}, false, at::kDouble) : t.sum(at::kDouble); };
  auto lowest = [&](const at::Tensor& t) { return rows ? t.amin({1}) : t.min(); };
  auto highest = [&](const at::Tensor& t) { return rows ? t.amax({1}) : t.max(); };
  std::vector<at::Tensor> f(kFields);
  // Scopes free each tensor-sized temporary once its fields are queued: at most two double
  // copies of the tensor and its masks are alive at once (docs/devices.md, device memory).
  at::Tensor not_finite, xf;  // xf: the finite values, 0 elsewhere (value sums cover those only)
  {
    const at::Tensor xd = x.scalar_type() == at::kDouble ? x : x.to(at::kDouble);
    const at::Tensor finite = at::isfinite(xd);
    f[kFinite] = sum(finite);
    f[kNaN] = sum(at::isnan(xd));
    f[kPosInf] = sum(at::isposinf(xd));
    not_finite = at::logical_not(finite);
    xf = xd.masked_fill(not_finite, 0.0);
  }
  {
    const at::Tensor af = xf.abs();
    // |x| <= dead_eps over the finite-masked magnitudes also counts every non-finite value (0
    // there, and dead_eps >= 0); resolve() takes those out on the host. One temporary fewer
    // than testing |x| itself.
    f[kZeroOrNotFinite] = sum(af.le(o.dead_eps));
    f[kSaturated] = sum(af.gt(o.saturation));  // non-finite values are 0 here, never above it
    f[kSumAbs] = sum(af);
    f[kMaxAbs] = highest(af);
  }
  f[kSum] = sum(xf);
  f[kSumSq] = sum(xf.square());
  f[kMin] = lowest(xf.masked_fill(not_finite, kInf));  // +Inf when no finite value, as Stats
  f[kMax] = highest(xf.masked_fill(not_finite, -kInf));
  const at::Tensor stacked = at::stack(f, rows ? 1 : 0);
  return rows ? stacked : stacked.unsqueeze(0);
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

std::size_t AtenStatsBatch::add(const at::Tensor& tensor, const std::string& name) {
  check_dense_float(tensor, name);
  check_options(options_, name);
  const std::size_t index = counts_.size();
  counts_.push_back(tensor.numel());
  // Nothing to reduce: min/max of no element would throw, and Stats{} with count 0 is the answer.
  if (tensor.numel() > 0) queue(fields_of(tensor.detach(), /*rows=*/false, options_));
  return index;
}

std::size_t AtenStatsBatch::add_slices(const at::Tensor& tensor, int64_t dim, const std::string& name) {
  check_dense_float(tensor, name);
  check_options(options_, name);
  const int64_t d = dim < 0 ? dim + tensor.dim() : dim;
  if (d < 0 || d >= tensor.dim())
    throw Error("tensor '" + name + "': channel dim " + std::to_string(dim) + " out of range for a tensor with " +
                std::to_string(tensor.dim()) + " dims");
  const std::size_t index = counts_.size();
  const int64_t channels = tensor.size(d);
  const int64_t per_row = channels ? tensor.numel() / channels : 0;
  counts_.insert(counts_.end(), static_cast<std::size_t>(channels), per_row);
  if (channels > 0 && per_row > 0)
    queue(fields_of(tensor.detach().movedim(d, 0).reshape({channels, per_row}), /*rows=*/true, options_));
  return index;
}

std::vector<Stats> AtenStatsBatch::resolve() {
  std::vector<Stats> out(counts_.size());
  for (std::size_t i = 0; i < counts_.size(); ++i) out[i].count = counts_[i];
  for (const Group& g : groups_) {
    // The one device-to-host copy of this device's results (a no-op on the CPU).
    const at::Tensor host = at::cat(g.parts, 0).to(at::kCPU).contiguous();
    ++copies_;
    const double* p = host.data_ptr<double>();
    for (std::size_t part = 0; part < g.parts.size(); ++part) {
      for (int64_t r = 0; r < g.parts[part].size(0); ++r, p += kFields) {
        Stats& s = out[g.first[part] + static_cast<std::size_t>(r)];
        // Counts summed in double are exact below 2^53 elements.
        s.finite = static_cast<int64_t>(p[kFinite]);
        s.nan = static_cast<int64_t>(p[kNaN]);
        s.pos_inf = static_cast<int64_t>(p[kPosInf]);
        s.neg_inf = s.count - s.finite - s.nan - s.pos_inf;
        s.zero = static_cast<int64_t>(p[kZeroOrNotFinite]) - (s.count - s.finite);
        s.saturated = static_cast<int64_t>(p[kSaturated]);
        s.sum = p[kSum];
        s.sum_sq = p[kSumSq];
        s.sum_abs = p[kSumAbs];
        s.min = p[kMin];
        s.max = p[kMax];
        s.max_abs = p[kMaxAbs];
      }
    }
  }
  counts_.clear();
  groups_.clear();
  return out;
}

Stats aten_stats(const at::Tensor& tensor, const std::string& name, const StatsOptions& options) {
  AtenStatsBatch batch(options);
  batch.add(tensor, name);
  return batch.resolve().front();
}

}  // namespace gradscope::torch::internal
