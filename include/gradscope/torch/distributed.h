// Merging what every rank of a data-parallel job measured, through a c10d process group, so
// that one run describes the whole job (docs/distributed.md).
//
//   auto group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, world, options);
//   gradscope::torch::AuditOptions o;
//   o.process_group = group;                 // every audited step: one allgather of the stats
//   if (rank == 0) o.sink = &run;            // rank 0 writes the run; the others write nothing
//   gradscope::torch::Audit audit(model, o); // audit.report() is the job's on every rank
//
// The Audit uses RankMerge itself; it is public so that other adapters merge the same way.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "gradscope/core/record.h"
#include "gradscope/core/run_sink.h"

namespace gradscope::torch {

/// A c10d process group (Gloo on the CPU; NCCL takes the same code on GPUs).
using ProcessGroupPtr = c10::intrusive_ptr<c10d::ProcessGroup>;

/// Where this process sits in its job, for a run's metadata.
struct JobInfo {
  int rank = 0;
  int world_size = 1;
  std::string backend;  ///< "gloo", "nccl", ...; empty for a single process
};

/// The group's rank, size and backend name; a single process without `group`.
JobInfo job_info(const ProcessGroupPtr& group);

/// One allgather of `mine` (the same size on every rank); every rank's tensor in rank order.
/// A failure (a rank died, or stalled past the group's timeout) throws Error "<who>: rank r of
/// n (backend): <what> failed; ...", so that no adapter waits forever or reports it its own way.
std::vector<at::Tensor> allgather_buffer(const ProcessGroupPtr& group, const at::Tensor& mine,
                                         const std::string& who, const std::string& what);

/// Merges each step's records across the ranks of a process group, one collective a step.
class RankMerge {
 public:
  /// `who` starts every error message ("audit"). `nodes` are this rank's node ids in a fixed
  /// order and `descriptions` what must agree across ranks for each (its parameters' dtypes
  /// and shapes). A collective: every rank constructs it, and every rank throws Error naming
  /// the difference when they disagree (or for a null group).
  RankMerge(ProcessGroupPtr group, std::string who, std::vector<std::string> nodes,
            std::vector<std::string> descriptions);

  /// Replaces `step`'s records of step `step.step` by the job's: Stats merged across ranks
  /// (the sites of parameters, their gradients and updates counted once when every rank holds
  /// the same bits, as after a gradient all-reduce), and its channel views and element
  /// histograms merged the same way in the same collective. Effective ranks and similarity
  /// records are not mergeable from these summaries: the Audit makes them the job's before
  /// this, from Gram matrices, centred cross-products or the rows themselves, whichever is
  /// smaller (internal::SpectraMerge, docs/distributed.md); here they pass through. Throws Error naming the difference when
  /// ranks disagree on the nodes or the step, and when a rank died or stalled past the
  /// group's timeout; every live rank throws the same way, none waits forever.
  void merge(StepRecords& step);

  /// The lowest rank that saw NaN or Inf at (step, node, site), for the earliest step where
  /// any rank saw one; -1 for any other (step, node, site).
  int nonfinite_rank(int64_t step, const std::string& node, Site site) const;

  const JobInfo& job() const { return job_; }

 private:
  void check_nodes();
  // One allgather of `mine` (same size on every rank); a failure becomes an Error.
  std::vector<at::Tensor> gather(const at::Tensor& mine, const std::string& what) const;

  ProcessGroupPtr group_;
  std::string who_;
  JobInfo job_;
  std::vector<std::string> nodes_, descriptions_;
  std::unordered_map<std::string, int> index_;  // node id -> position in nodes_
  // Where NaN/Inf began: the earliest step any rank saw one, and per (node, site) slot the
  // lowest rank that saw one then.
  int64_t nonfinite_step_ = -1;
  std::vector<int> nonfinite_rank_;
};

}  // namespace gradscope::torch
