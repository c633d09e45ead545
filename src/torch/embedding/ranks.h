// The embedding trackers across ranks: each tracked step, the rows touched on any rank and their
// lookup counts, merged through one allgather for every table of a process group (a lone tracker's
// one table, or all the tables an EmbeddingHub steps in that group; docs/distributed.md,
// "Embeddings").
//
//   EmbeddingRankMerge ranks(group);
//   ranks.check_table("embedding 'items'", rows, dim);  // at construction, a collective
//   RanksTable items{"embedding 'items'", step, rows, dim, true, &touched, hashes};
//   ranks.merge({&items});                              // touched becomes the job's
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "embedding/batch.h"
#include "gradscope/torch/distributed/rank_merge.h"

namespace gradscope::torch {

/// FNV-1a over the bits of `dim` floats: a row's gradient, compared across ranks.
uint64_t hash_row(const float* row, int64_t dim);

/// One table's part of a merge.
struct RanksTable {
  std::string who;  ///< starts its errors: "embedding 'items'"
  int64_t step = 0;
  int64_t rows = 0, dim = 0;
  /// False for a hub's table that this step does not track (its track_every): it sends no rows
  /// and `touched` stays as it is, but its step is still compared across ranks.
  bool tracked = false;
  TouchedRows* touched = nullptr;  ///< this rank's rows in, the job's out (when tracked)
  std::vector<uint64_t> hashes;    ///< hash_row of each touched row's gradient, 0 without one
  /// Out: whether every row touched on several ranks has the same gradient bits on each (as
  /// after a gradient all-reduce).
  bool same = true;
};

/// Merges the touched rows of the tables of one process group, one collective per call.
class EmbeddingRankMerge {
 public:
  /// Throws Error for a null group; no collective.
  explicit EmbeddingRankMerge(ProcessGroupPtr group);

  /// A collective: every rank throws Error naming the difference when the ranks' tables of
  /// `who` have other shapes (before training, where the gradient all-reduce of such tables
  /// would fail without naming them).
  void check_table(const std::string& who, int64_t rows, int64_t dim);

  /// A collective: one allgather carries every table of `tables` (two when some rank touched more
  /// rows than the buffers hold: they grow on every rank alike). Each tracked table's touched
  /// rows become the union over the ranks, lookups and negatives summed. Throws Error naming the
  /// table and the difference when the ranks' tables ([rows, dim]) or steps differ, and naming
  /// the tables when a rank died or stalled past the group's timeout.
  void merge(const std::vector<RanksTable*>& tables);

  const JobInfo& job() const { return job_; }

 private:
  // Throws on the first difference between rank 0's and another rank's buffer header and tables.
  void check(const std::vector<at::Tensor>& all, const std::vector<RanksTable*>& tables, const std::string& who) const;

  ProcessGroupPtr group_;
  JobInfo job_;
  // Rows one rank's buffer holds, for all tables together. Every rank grows it alike (from the
  // counts every rank sent) when a step touches more rows on some rank, straight to the power
  // of two that holds them, and that step takes a second allgather. The buffer's size depends
  // on nothing else (not on which tables a step tracks), so ranks that disagree on a step still
  // exchange buffers of one size and throw naming it, rather than abort in Gloo, which
  // terminates a rank that receives more bytes than it posted. Small at first so that the
  // buffer fits the batch.
  int64_t capacity_ = 8;
};

}  // namespace gradscope::torch
