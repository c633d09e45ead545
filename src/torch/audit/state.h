// The audit's shared state. Hooks hold it weakly, so they go inert when the Audit is gone.
#pragma once

#include <ATen/core/Tensor.h>

#include <deque>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "aten_stats.h"
#include "gradscope/core/audit/rules.h"
#include "gradscope/torch/audit/audit.h"
#include "distributed/spectra.h"
#include "audit/step_ring.h"

namespace gradscope::torch {

/// The element histogram of `x` (its touched rows when sparse; empty for a tensor that is not
/// floating point), histograms.cpp.
ElementHistogram element_histogram(const at::Tensor& x, int64_t step, const std::string& node, Site site);

struct Audit::State : std::enable_shared_from_this<Audit::State> {
  using ModulePtr = std::shared_ptr<::torch::nn::Module>;

  /// A node, a scoped submodule ("node/sub") or a free node (tap id without a module).
  struct Entry {
    std::string id;
    ModulePtr module;     // null for free nodes
    int parent = -1;      // index of the node, for submodules
    int sample_every = 1; // submodules: every N audited steps
    int64_t grad_order = -1;  // arrival of its first gradient in the first audited backward
    int64_t channels = 0;     // channel count of its channel view, once sampled
    // Resolved from the options once, so a tap looks nothing up by name.
    const ChannelView* channel_view = nullptr;
    bool leakage = false;     // in a leakage pair
    std::string grad_name;    // "<id> output gradient", for error messages
    std::vector<std::size_t> params;  // indices into State::params
    bool sharded = false;     // holds a parameter shard: its parameter sites merge as sums
    // Gradient SNR state (opt-in): sum over steps of ||g||^2, and the step count.
    double snr_sq_sum = 0;
    int64_t snr_steps = 0;
  };
  struct Param {
    // "<node>.<path>", and with ".grad", " update", " before the step": names for errors.
    std::string name, grad_name, update_name, before_name;
    at::Tensor tensor;
    int node = -1, sub = -1;
    at::Tensor snapshot;  // value before the optimizer step, reused across steps
    at::Tensor snr_sum;   // opt-in: sum over audited steps of the gradient (double)
    // The last update pass carried the value forward: `snapshot` holds the value it measured
    // (`carried_value`), valid while the tensor's version counter is still `carried_version`.
    bool carried = false;
    int64_t carried_version = 0;
    Stats carried_value;
    // A shard of a larger parameter (AuditOptions::parameter_shards): the whole one's shape,
    // and whether this rank's shard counts in the job's sums. Its value is never carried: the
    // version counter of a DTensor's local tensor does not move when the optimizer writes it.
    bool shard = false, counted = true;
    std::vector<int64_t> whole_shape;
  };

  AuditOptions options;
  StatsOptions stats_options;
  mutable std::mutex mutex;  // hooks may run on autograd worker threads
  std::vector<Entry> entries;
  std::unordered_map<std::string, int> by_id;
  std::unordered_map<const ::torch::nn::Module*, int> by_module;
  std::vector<Param> params;
  std::vector<std::pair<at::Tensor, unsigned>> order_hooks;  // removed after the first audited step

  int64_t step = 0;
  int64_t first_audited = -1;
  int64_t grad_counter = 0;
  std::vector<int> tap_sequence;  // execution order of tapped entries
  int last_tapped = -1;
  int64_t last_tapped_step = -1;
  // What the step being recorded measured so far; at its end (end_step, records.cpp)
  // it is judged into `judged`, kept in `kept` and handed to on_step.
  StepRecords current;
  StepRecords handed;  // the ended step, when no ring keeps it
  internal::StepRing kept;
  ReportBuilder judged;          // every ended step, aggregated per node
  std::map<int, ChannelRecord> pending_channels;  // this step's channel view, by entry
  std::map<int, at::Tensor> leakage_inputs;       // this step's branch activations, by entry
  std::vector<std::string> warnings;
  std::map<int, ElementHistogram> pending_param_histograms;  // this step's, by entry
  /// Each node's attention heads and the step they were first recorded at: a count is fixed
  /// for the run, since every reader of the run refuses one that changes.
  std::unordered_map<std::string, std::pair<std::size_t, int64_t>> attention_heads;

  // Which forwards are training passes (phase.cpp). Guarded by `mutex`.
  int pause_depth = 0;
  /// This step's forwards of each entry with gradients disabled in training mode: reentrant
  /// activation checkpointing runs its first forward so and records in the recomputation.
  std::map<int, int> no_grad_forwards;
  /// Whether a forward of entry `index` now is one to record: not paused, module in training
  /// mode, gradients enabled, and not a checkpoint's recomputation of a forward recorded
  /// already. `consume`: the tap (not the pre-activation before it) uses up a pending
  /// no-grad forward. Takes `mutex`.
  bool training_pass(int index, bool consume);

  // Mixed precision (loss_scale.cpp). Guarded by `mutex`.
  double loss_scale = 1;      // the factor this step's gradients carry
  double output_grad_factor = 1;  // many processes averaging gradients: the world size
  bool has_loss_scale = false;
  bool param_grads_unscaled = false;
  LossScaleReport loss_scale_report;
  /// stats_options for a tensor that carries `scale` (its thresholds scaled with it).
  StatsOptions options_for(double scale) const;
  /// At an audited step's end, after resolve_stats (mutex held): whether the step overflowed
  /// at its loss scale and changed no parameter; if so its gradient and update records (and
  /// gradient channel views and histograms) are dropped. Counts the step in
  /// loss_scale_report when a loss scale is set.
  void settle_loss_scale(int64_t at_step);

  // forward(): a Sequential's children resolved to entries once (forward.cpp).
  struct ForwardPlan {
    const ::torch::nn::SequentialImpl* sequential = nullptr;
    std::vector<const ::torch::nn::Module*> children;
    std::vector<int> pre_activation;  // entry whose pre-activation is child i's output, or -1
    std::vector<int> tap_after;       // entry tapped with child i's output, or -1
    std::vector<::torch::nn::SequentialImpl*> nested;  // child i, a Sequential with entries inside
  };
  std::deque<ForwardPlan> plans;  // a deque: forward() keeps a pointer while a nested call adds one

  // step()'s per-entry sums of one step, kept to reuse their memory (step.cpp).
  struct EntrySums {
    Stats grad, value, frozen, update;
    bool any_grad = false, any_value = false, any_frozen = false, any_update = false;
  };
  std::vector<EntrySums> sums;
  /// Adds to the step's sums of p's node, and of its submodule when that one is audited.
  template <class F>
  void into_sums(const Param& p, F&& add) {
    if (!p.counted) return;  // another rank's shard counts this copy
    add(sums[static_cast<std::size_t>(p.node)]);
    if (p.sub >= 0 && entry_audited(entries[static_cast<std::size_t>(p.sub)])) add(sums[static_cast<std::size_t>(p.sub)]);
  }

  // The ATen path (tensors not on the CPU, or forced): every summary of an audited step is
  // queued on one batch and copied to the host once per device as the step ends, not once
  // per tensor (a synchronisation each on a GPU). Until then `deferred` says where each
  // summary goes; resolve_stats() places them in queue order, the order in which the fused
  // path merges as it goes, so the sums come out bit for bit as per tensor (deferred.cpp).
  struct Deferred {
    enum class To { kRecord, kChannelActivation, kChannelGrad, kFrozen, kValue, kGrad, kGradSnr, kUpdate };
    To to;
    std::size_t first;      // index in the batch (of the first channel, for channels)
    std::size_t target;     // into current.records (kRecord), entries (channels) or params
    std::size_t count = 1;  // channels
    double scale = 1;       // the loss scale the tensor carries (gradients), divided out
  };
  internal::AtenStatsBatch batch{StatsOptions{}};  // made with stats_options by init_nodes
  std::vector<Deferred> deferred;
  /// Appends `r` to the step's records; `x` is measured into it later, through `batch`. Call
  /// with `mutex` held. Throws, recording nothing, for a tensor the ATen path refuses.
  /// `scale`: the loss scale `x` carries (gradients).
  void defer_record(Record r, const at::Tensor& x, const std::string& name, double scale = 1);
  /// Queues `x` for the step's sums of params[param] (`to`: kFrozen .. kUpdate). Takes `mutex`.
  void defer_param(Deferred::To to, std::size_t param, const at::Tensor& x, const std::string& name,
                   double scale = 1);
  /// Copies the batch to the host (one copy per device) and places every deferred summary.
  /// Call with `mutex` held: before a step's records are built, and before they are read.
  void resolve_stats();
  // Many processes: merges each ended step across ranks (distributed.cpp).
  std::unique_ptr<RankMerge> ranks;
  // Many processes: the job's effective ranks and CKA at the steps that measure them.
  std::unique_ptr<internal::SpectraMerge> spectra;
  std::vector<char> snapshotted, had_grad;
  std::vector<char> fused;  // per parameter: measured by an instrumented optimizer's own pass

  bool audited() const { return step % options.sample_every == 0; }
  int64_t audit_index() const { return step / options.sample_every; }
  bool entry_audited(const Entry& e) const {
    return audited() && audit_index() % e.sample_every == 0;
  }
  /// Whether this audited step counts element histograms (AuditOptions::histogram_every).
  bool histogram_step() const {
    return options.histogram_every > 0 && audited() && audit_index() % options.histogram_every == 0;
  }
  /// Whether this audited step measures attention (AuditOptions::attention_every).
  bool attention_step() const {
    return options.attention_every > 0 && audited() && audit_index() % options.attention_every == 0;
  }
  /// Adds `h` to the step being recorded, merged with one of the same node and site (a node
  /// tapped twice in a step). Call with `mutex` held (histograms.cpp).
  void add_histogram(ElementHistogram h);
  /// Counts `grad` into the parameter-gradient histograms of its node (and its submodule's
  /// when audited), pending until end_param_histograms.
  void param_grad_histogram(const Param& p, const at::Tensor& grad);
  /// Moves the pending parameter-gradient histograms into the step. Call with `mutex` held.
  void end_param_histograms();
  int add_entry(std::string id, ModulePtr module, int parent);
  /// With a process group: makes `ranks` from the nodes (distributed.cpp).
  void init_ranks();
  /// With a process group, at audited step `at_step`'s end (mutex held): merges the step
  /// being recorded across ranks; with merge_async it starts that merge and ends the previous
  /// audited step's instead. `ended` is set to the step that ended, to hand over, as soon as
  /// it has (even when this then throws).
  void merge_step(int64_t at_step, const StepRecords*& ended);
  /// Whether channel views or element histograms may come at this step, from the options
  /// alone: the same on every rank.
  bool views_step() const;
  /// With a merge in flight: waits for it, ends its step and hands it over. Call without
  /// `mutex` held; throws as step() would.
  void settle();
  /// Hands an ended step to on_step and the sink (this rank's, when it writes the run).
  void hand_over(const StepRecords& ended);
  /// step() is handing a step over while the next one's merge is in flight: settle() leaves
  /// that merge alone (its step() has not returned), so that a report() from on_step cannot
  /// hand step N over before step N-1's callbacks end. Guarded by `mutex`.
  bool handing_over = false;
  /// With a process group: hands a tap's channel view over to `spectra` (its group pairs are
  /// similarity records from `first_similarity` on), spectra.cpp. Call with `mutex` held.
  void spectra_channel_view(const std::string& id, const ChannelView& view, const at::Tensor& x,
                            std::size_t first_similarity);
  /// With a process group: replaces the step's effective ranks and CKA by the job's (a
  /// collective at the steps with channel views or leakage pairs). Call with `mutex` held.
  void merge_spectra(int64_t at_step);
  /// Whether this process hands the run to the sink: rank 0, or no process group.
  bool writes_run() const { return !ranks || ranks->job().rank == 0; }
  /// Judges, keeps and returns `done`'s measurements (valid until the next end_step); `done`
  /// comes back cleared.
  const StepRecords& end_step(StepRecords& done);
  /// Adds a step's measurements to `builder`. Records of a step the builder has already passed
  /// (a backward run after step()) are left out; returns how many.
  std::size_t judge_into(ReportBuilder& builder, const StepRecords& step) const;
  /// Tap and pre-activation of the entry at `index` (tap.cpp).
  at::Tensor tap(int index, const at::Tensor& x);
  void pre_activation(int index, const at::Tensor& x);
  void note_tap(int index);
  std::string unknown_id_message(const std::string& id) const;
};

}  // namespace gradscope::torch
