// Stats of tensors that are not on the CPU: ATen reductions on the tensor's own device.
//
//   internal::AtenStatsBatch batch(options);
//   const std::size_t g = batch.add(grad, "fc1.weight.grad");   // queued on grad's device
//   const std::size_t c = batch.add_slices(act, 1, "fc1");      // one Stats per channel
//   std::vector<Stats> all = batch.resolve();                   // one small copy per device
//
// The CPU keeps the fused kernel (gradscope::compute); this path is taken for any other
// device, or for CPU tensors too when GRADSCOPE_FORCE_ATEN_STATS is set (tests compare the
// two paths on the same data). docs/devices.md gives the tolerances between them.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <string>
#include <vector>

#include "gradscope/core/stats/stats.h"

namespace gradscope::torch::internal {

/// Throws Error naming `name` for an undefined, non-strided (sparse), data-less (meta) or
/// non-float tensor: what both paths refuse, with the same messages.
void check_dense_float(const at::Tensor& tensor, const std::string& name);

/// True when `tensor` is reduced with ATen ops: it is not on the CPU, or the ATen path is forced.
bool use_aten_stats(const at::Tensor& tensor);

/// Forces the ATen path for CPU tensors too (or stops forcing it). The process starts forced
/// when the environment variable GRADSCOPE_FORCE_ATEN_STATS is set to anything but "" or "0".
void force_aten_stats(bool on);
bool aten_stats_forced();

/// Device temporaries are bounded: a tensor is reduced in chunks whose temporaries (a double
/// copy of the chunk, a boolean mask and its int32 cast) stay within aten_stats_budget().
inline constexpr std::size_t kTempBytesPerElement = 8 + 1 + 4;
inline constexpr std::size_t kAtenStatsMaxBudget = std::size_t{64} << 20;
inline constexpr std::size_t kAtenStatsMinBudget = std::size_t{1} << 20;

/// Bytes of temporaries the ATen path may hold at once for `tensor`: its own size, but at
/// least 1 MiB (small tensors in one piece) and at most 64 MiB (docs/devices.md).
std::size_t aten_stats_budget(const at::Tensor& tensor);

/// Elements of `tensor` reduced at once: aten_stats_budget() / kTempBytesPerElement, or less
/// under set_aten_stats_chunk_limit().
int64_t aten_stats_chunk_elements(const at::Tensor& tensor);

/// For tests: caps every chunk at `elements` (0: no cap beyond the budget).
void set_aten_stats_chunk_limit(int64_t elements);

/// Queues ATen reductions of several tensors and copies all their results to the host at once.
class AtenStatsBatch {
 public:
  explicit AtenStatsBatch(StatsOptions options);

  /// Queues one summary of the whole tensor; returns its index in resolve()'s result. Throws
  /// Error naming `name` for an undefined, sparse, non-float or data-less (meta) tensor.
  /// `threshold_scale`: the factor the tensor carries (a loss-scaled gradient); its zero and
  /// saturation thresholds are scaled with it (core/stats/scaled.h), the sums left to unscale.
  std::size_t add(const at::Tensor& tensor, const std::string& name, double threshold_scale = 1);

  /// Queues one summary per slice of `tensor` along `dim` (its channels); returns the index of
  /// the first. A tensor with size(dim) == 0 queues nothing.
  std::size_t add_slices(const at::Tensor& tensor, int64_t dim, const std::string& name,
                         double threshold_scale = 1);

  /// Everything queued, in order: one device-to-host copy per device; empties the batch.
  std::vector<Stats> resolve();

  std::size_t size() const { return counts_.size(); }

  /// Device-to-host copies made by resolve() so far (tests check there is one per device).
  std::size_t copies() const { return copies_; }

 private:
  struct Group {
    at::Device device;
    std::vector<at::Tensor> parts;  // [rows, fields] double, on `device`
    std::vector<std::size_t> first;  // index in counts_ of each part's first row
  };
  void queue(const at::Tensor& fields);

  StatsOptions options_;
  std::vector<int64_t> counts_;    // elements of each queued summary (known on the host)
  std::vector<Group> groups_;
  std::size_t copies_ = 0;
};

/// Device-to-host copies made by every AtenStatsBatch of the process so far: tests read it
/// before and after an audited step (docs/devices.md counts them with it).
std::size_t aten_stats_copies();

/// One tensor through the ATen path (a batch of one: one small copy).
Stats aten_stats(const at::Tensor& tensor, const std::string& name, const StatsOptions& options);

}  // namespace gradscope::torch::internal
