// Effective ranks and linear CKA of the whole job, across the ranks of a process group
// (docs/distributed.md). Neither is a function of per-rank Stats, but both are of sufficient
// statistics that add up across ranks:
//
//   effective rank: the singular values of the job's [samples x channels] matrix
//     M = [m_0; m_1; ...] are sqrt(eig(M^T M)), and M^T M = sum_r m_r^T m_r (C x C);
//   linear CKA (Kornblith et al. 2019): ||Y_c^T X_c||_F^2 / (||X_c^T X_c||_F ||Y_c^T Y_c||_F)
//     with X_c, Y_c centred by the job's means; each cross-product matrix is the sum of the
//     shards' own centred ones plus n_r (mu_r - mu)(mu_r - mu)^T (Chan, Golub & LeVeque 1979,
//     the pairwise update of centred sums of squares, here for matrices).
//
// When a shard's rows are fewer than those statistics' size (wide activations, flattened conv
// features), the rows themselves are smaller: the merge then gathers them and computes on the
// concatenation, which is what one process fed the concatenated batches computes. Either way
// the value is exact (to rounding); the route is picked by the bytes a rank sends.
//
//   SpectraMerge spectra(group, "audit", 16 << 20);
//   spectra.add_rank("conv2", x, 1);               // at a sampled tap
//   spectra.add_similarity({3, 4}, xa, xb);          // records 3 and 4 of the step share it
//   spectra.merge(step, warnings);                   // at the step's end: three allgathers
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "gradscope/core/vocabulary/record.h"
#include "gradscope/torch/distributed/rank_merge.h"

namespace gradscope::torch::internal {

/// x as [samples, channels along dim] in double, a copy (effective_rank()'s matrix).
at::Tensor channel_matrix(const at::Tensor& x, int64_t dim);

/// x as [samples (first dim), features (the rest, flattened)] in double, a copy (CKA's).
at::Tensor sample_matrix(const at::Tensor& x);

/// One shard's sufficient statistics for linear CKA centred by the mean of every shard.
struct CkaMoments {
  int64_t n = 0;
  at::Tensor mean_x, mean_y;  ///< [d1], [d2]
  at::Tensor xx, yy, yx;      ///< centred by these means: [d1, d1], [d2, d2], [d2, d1]
};

/// The moments of sample matrices `x` [n, d1] and `y` [n, d2] (finite, n the same).
CkaMoments cka_moments(const at::Tensor& x, const at::Tensor& y);

/// The moments of the concatenated shards, combined in the order given (shards with n = 0
/// count for nothing).
CkaMoments combine(const std::vector<CkaMoments>& shards);

/// Linear CKA from (combined) moments: linear_cka() of the concatenated samples; NaN when
/// either side is constant or there are no samples.
double linear_cka(const CkaMoments& m);

/// Collects a step's effective ranks and CKA measurements on this rank and replaces them by
/// the job's at the step's end.
class SpectraMerge {
 public:
  /// `max_bytes`: the most one rank sends per step; measurements beyond stay this rank's own.
  SpectraMerge(ProcessGroupPtr group, std::string who, int64_t max_bytes);

  /// The activation behind the effective rank of `node`'s channel record this step (a later
  /// call for the same node replaces it, as the record is replaced).
  void add_rank(const std::string& node, const at::Tensor& x, int64_t dim);

  /// The two activations behind similarity records `records` (indices into the step's
  /// similarities) this step.
  void add_similarity(std::vector<std::size_t> records, const at::Tensor& x, const at::Tensor& y);

  /// Replaces the registered effective ranks and similarities of `step` by the job's. A
  /// collective of three allgathers: every rank calls it at the same steps, with or without
  /// measurements. Throws Error when ranks disagree on what they measured (nodes, channel or
  /// feature counts) or when a rank died or stalled; adds a warning (once per measurement)
  /// for one kept local because it would pass `max_bytes`.
  void merge(StepRecords& step, std::vector<std::string>& warnings);

  /// Bytes this rank sent for the last merge (headers included).
  int64_t last_bytes() const { return last_bytes_; }

 private:
  struct Item {
    std::string key;               // names it: "node 'a': effective rank", "node 'a': CKA with 'b'"
    at::Tensor a, b;               // channel matrix; or the two sample matrices
    std::vector<std::size_t> records;  // similarity records; empty for an effective rank
    std::string node;              // the channel record's node, for an effective rank
  };
  ProcessGroupPtr group_;
  std::string who_;
  int64_t max_bytes_;
  std::vector<Item> items_;
  std::set<std::string> warned_;
  int64_t last_bytes_ = 0;
};

}  // namespace gradscope::torch::internal
