// The embedding tracker across ranks: each tracked step, the rows touched on any rank and their
// lookup counts, merged through one allgather (docs/distributed.md, "Embeddings").
//
//   EmbeddingRankMerge ranks(group, "embedding 'items'");
//   bool same = ranks.merge(step, rows, dim, touched, hashes);  // touched becomes the job's
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "embedding_batch.h"
#include "gradscope/torch/distributed.h"

namespace gradscope::torch {

/// FNV-1a over the bits of `dim` floats: a row's gradient, compared across ranks.
uint64_t hash_row(const float* row, int64_t dim);

class EmbeddingRankMerge {
 public:
  /// `who` starts every error message. A collective: every rank constructs it for its table
  /// of `rows` x `dim`, and every rank throws Error naming the difference when the tables
  /// differ (before training, where the gradient all-reduce of such tables would fail without
  /// naming it), or for a null group.
  EmbeddingRankMerge(ProcessGroupPtr group, std::string who, int64_t rows, int64_t dim);

  /// A collective: replaces `touched` (this rank's rows of step `step`, with `hashes[k]` the
  /// hash_row of row k's gradient, 0 without one) by the union over the ranks, lookups and
  /// negatives summed. Returns whether every row touched on several ranks has the same gradient
  /// bits on each (as after a gradient all-reduce). Throws Error naming the difference when the
  /// ranks' tables ([rows, dim]) or steps differ, and when a rank died or stalled.
  bool merge(int64_t step, int64_t rows, int64_t dim, TouchedRows& touched,
             const std::vector<uint64_t>& hashes);

  const JobInfo& job() const { return job_; }

 private:
  // Throws naming the first rank whose [rows, dim] (words 2, 3 of its buffer) differ from rank 0's.
  void check_tables(const std::vector<at::Tensor>& all) const;

  ProcessGroupPtr group_;
  std::string who_;
  JobInfo job_;
  // Rows a rank's buffer holds. Every rank grows it alike (from the counts every rank sent)
  // when a step touches more rows on some rank, straight to the power of two that holds them,
  // and that step takes a second allgather. Small at first so that the buffer fits the batch
  // (the 2-rank test grows it at its first step).
  int64_t capacity_ = 8;
};

}  // namespace gradscope::torch
