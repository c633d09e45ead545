// Merging what every rank of a data-parallel job measured, through a c10d process group, so
// that one run describes the whole job (docs/distributed.md).
//
//   c10::intrusive_ptr<c10d::ProcessGroup> group = ...;  // Gloo or NCCL (docs/distributed.md)
//   gradscope::torch::AuditOptions o;
//   o.process_group = group;                 // every audited step: one allgather of the stats
//   o.merge_async = true;                    // optional: waited on at the next audited step
//   if (rank == 0) o.sink = &run;            // rank 0 writes the run; the others write nothing
//   gradscope::torch::Audit audit(model, o); // audit.report() is the job's on every rank
//
// The Audit uses RankMerge itself; it is public so that other adapters merge the same way.
#pragma once

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/audit/run_sink.h"

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

/// The device the merge's buffers travel on: the CPU where the group has a backend for CPU
/// tensors (Gloo; "cpu:gloo,cuda:nccl") or none at all (a ProcessGroup subclass doing its own
/// collectives); else the first device type it has a backend for, the current CUDA device for
/// NCCL (init_process_group("nccl") has no CPU backend). What is gathered is read on the CPU.
c10::Device collective_device(const ProcessGroupPtr& group);

/// One allgather of `mine` (the same size on every rank); every rank's tensor in rank order.
/// A failure (a rank died, or stalled past the group's timeout) throws Error "<who>: rank r of
/// n (backend): <what> failed; ...", so that no adapter waits forever or reports it its own way.
std::vector<at::Tensor> allgather_buffer(const ProcessGroupPtr& group, const at::Tensor& mine,
                                         const std::string& who, const std::string& what);

/// Every rank's `text`, in rank order: two allgathers (the lengths, then the bytes padded to
/// the longest), for naming what ranks disagree on once a hash has said that they do. Throws
/// as allgather_buffer.
std::vector<std::string> allgather_text(const ProcessGroupPtr& group, const std::string& text,
                                        const std::string& who, const std::string& what);

/// Merges each step's records across the ranks of a process group, one collective a step.
class RankMerge {
 public:
  /// `who` starts every error message ("audit"). `nodes` are this rank's node ids in a fixed
  /// order and `descriptions` what must agree across ranks for each (its parameters' dtypes
  /// and shapes). A collective: every rank constructs it, and every rank throws Error naming
  /// the difference when they disagree (or for a null group). `sharded` (empty: none) marks
  /// the nodes whose ranks hold shards of their parameters: their parameter sites merge as
  /// sums (each rank's shard is a different part), never "once when the bits agree"; it must
  /// agree across ranks, so `descriptions` should say it. `share_batch`: every rank runs the
  /// same samples (tensor parallelism): sample-side records count once when every rank holds
  /// the same bits, else add, and attention heads that differ are concatenated in rank order.
  RankMerge(ProcessGroupPtr group, std::string who, std::vector<std::string> nodes,
            std::vector<std::string> descriptions, std::vector<char> sharded = {}, bool share_batch = false);
  ~RankMerge();

  /// Starts merging `step` (this rank's records of step `step.step`) and returns without
  /// waiting for the collective; finish() waits and hands the job's records back. One merge at
  /// a time: finish() before the next start(). The allgather is started here, at the same
  /// point of every rank's training loop, so that collectives of the merge never interleave
  /// differently with the caller's own (a rank calling finish() early, from report(), starts
  /// none). `views_step` must be the same on every rank: whether channel views or element
  /// histograms may come at this step. Then the ranks' slots go first and are waited on here,
  /// and the views follow in a second allgather of the size they agreed on: ranks that measured
  /// other channel counts or other nodes throw Error naming the difference, here, on every
  /// rank, instead of meeting in a collective of other sizes (which Gloo answers by aborting
  /// the process). At other steps the channel views and histograms of `step`, if any (a
  /// backward that ran late), stay this rank's. Throws as finish() when the step's collective
  /// fails here.
  void start(StepRecords step, bool views_step);

  /// Whether a merge started by start() waits for finish().
  bool pending() const { return pending_ != nullptr; }

  /// Waits for the started merge (the group's timeout bounds the wait) and returns its step
  /// with the job's records: Stats merged across ranks (the sites of parameters, their
  /// gradients and updates counted once when every rank holds the same bits, as after a
  /// gradient all-reduce), its channel views and element histograms merged the same way.
  /// Effective ranks and similarity records pass through: the Audit makes them the job's
  /// before this, from Gram matrices, centred cross-products or the rows themselves, whichever
  /// is smaller (internal::SpectraMerge, docs/distributed.md).
  /// Throws Error naming the step when ranks disagree on it, and when a rank died or stalled
  /// past the group's timeout ("... the merge of step N failed; ..."); every live rank throws
  /// the same way, none waits forever. The merge is over either way.
  StepRecords finish();

  /// start(step, views_step) then finish(), into `step`.
  void merge(StepRecords& step, bool views_step = true);

  /// The lowest rank that saw NaN or Inf at (step, node, site), for the earliest step where
  /// any rank saw one; -1 for any other (step, node, site).
  int nonfinite_rank(int64_t step, const std::string& node, Site site) const;

  const JobInfo& job() const { return job_; }

 private:
  struct Pending;  // a started merge (distributed/rank_merge.cpp)
  void check_nodes();
  // Every rank's `text` (any lengths), through two allgathers: for error messages.
  std::vector<std::string> gather_texts(const std::string& text, const std::string& what) const;
  // Throws Error naming how the ranks' views of `step` differ (views_step only).
  [[noreturn]] void views_differ(const StepRecords& step) const;
  // One allgather of `mine` (same size on every rank); a failure becomes an Error.
  std::vector<at::Tensor> gather(const at::Tensor& mine, const std::string& what) const;

  ProcessGroupPtr group_;
  std::string who_;
  JobInfo job_;
  std::vector<std::string> nodes_, descriptions_;
  std::unordered_map<std::string, int> index_;  // node id -> position in nodes_
  std::vector<char> sharded_;                   // per node: its parameters are shards
  bool share_batch_ = false;                    // every rank runs the same samples
  // Where NaN/Inf began: the earliest step any rank saw one, and per (node, site) slot the
  // lowest rank that saw one then.
  int64_t nonfinite_step_ = -1;
  std::vector<int> nonfinite_rank_;
  std::unique_ptr<Pending> pending_;
};

}  // namespace gradscope::torch
