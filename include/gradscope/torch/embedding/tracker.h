// EmbeddingTracker: per-row training dynamics of a LibTorch embedding table, at a cost that
// depends on the batch, never on the table size.
//
//   gradscope::torch::EmbeddingTracker tracker(model->item_emb, "item_emb");
//   for (...) {
//     optimizer.zero_grad();
//     at::Tensor e = tracker.forward(item_ids);   // or item_emb(ids); tracker.observe(ids)
//     tracker.forward(negative_ids, gradscope::torch::Role::kNegative);  // sampled negatives
//     loss_fn(e, ...).backward();
//     tracker.step(optimizer);                    // = before_step(); optimizer.step(); after_step()
//   }
//   std::cout << gradscope::render_embedding_json(tracker.report());
//
// Per tracked step, only the rows in the batch (touched rows) are read: their gradient after
// backward, their values before and after the optimizer step (the real update), in
// O(touched rows x dim). Updates to rows outside the batch (momentum on dense optimizers) are
// not seen. State: gradscope::EmbeddingRows, 80 + 6 x dim bytes per row padded to 64.
//
// Lookups are counted two ways: exposure (once per step a row is in the batch) and lookups
// (every occurrence); those observed with Role::kNegative also count as negatives, which
// NEGATIVE_SAMPLER_SKEW compares with the sampler declared in options.negative_sampler.
//
// Auto-fix (options.auto_fix, off by default): after backward and before the optimizer step,
// the gradient of each touched zombie row is multiplied by zombie_scale(SNR) =
// clamp(snr / (1 + snr), fix_min_scale, fix_max_scale) — the minimum-mean-square-error gain
// for a gradient that is signal plus noise; optionally touched under-trained rows are boosted.
// Zombie here is options.zombie_rule; GradTracer's rule uses the median velocity of the
// step's touched rows (the table median is O(rows)).
// Every act goes to options.on_intervention (gradscope::AuditLog writes audit.jsonl).
//
// Input handling: indices outside [0, rows) throw Error naming the layer; an empty batch is a
// step with no touched rows; an undefined gradient at a step skips the gradient statistics of
// that step (exposure and updates still count, warnings() says so); f16/bf16/f64 weights are
// read as float32 rows; a module that is not Embedding or EmbeddingBag throws Error. The
// per-row state is sized to the table when the tracker is attached, so a weight given another
// shape later (weight.set_data(...), rows or dim, growing or shrinking) or a gradient of
// another shape throws Error naming the layer at the next tracked observe/step and in
// report(), before any row is read: a new table needs a new tracker. LibTorch's own errors in
// forward() come back as Error naming the layer.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>
#include <torch/optim/optimizer.h>

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/embedding/report.h"
#include "gradscope/core/vocabulary/record.h"
#include "gradscope/torch/distributed/rank_merge.h"

namespace gradscope::torch {

/// Why the rows of a lookup were looked up.
enum class Role {
  kLookup,    ///< the model's own lookups (positives, queries, features)
  kNegative,  ///< rows drawn by a negative sampler
};

/// What the tracker measures and how auto-fix acts.
struct EmbeddingTrackerOptions {
  /// zombie_*, velocity_ema, oscillation_ema, update_ratio_lo are used.
  Thresholds thresholds;
  /// The zombie test of report() and of auto-fix.
  ZombieRule zombie_rule = ZombieRule::kWindowed;
  /// The sampler the negatives (Role::kNegative) should follow, for report().
  NegativeSampler negative_sampler;
  /// EMA rate of the per-row gradient mean and variance (for the SNR).
  double gradient_ema = 0.9;
  /// Track every N-th step (others cost one integer test in observe/step).
  int track_every = 1;
  /// Scale zombie rows' gradients by clamp(snr / (1 + snr), fix_min_scale, fix_max_scale).
  bool auto_fix = false;
  double fix_min_scale = 0.1;  ///< GradTracer's fixed factor, kept as the floor
  double fix_max_scale = 1.0;
  /// Also boost rows with 2 <= gradients seen and exposure <= undertrained_exposure by
  /// 1 + (boost_max - 1) x snr / (1 + snr).
  bool boost_undertrained = false;
  double undertrained_exposure = 5;
  double boost_max = 2.0;
  /// Rows sampled (evenly over exposed rows) for the effective rank in report().
  int64_t rank_sample_rows = 1024;
  /// Each auto-fix act (e.g. AuditLog::append).
  std::function<void(const EmbeddingIntervention&)> on_intervention;
  /// Per tracked step: records of the touched rows' gradient (site kEmbeddingRows) and their
  /// real update (site kUpdate), e.g. for a RunWriter.
  std::function<void(const std::vector<Record>&)> on_step;
  /// The job's process group (docs/distributed.md): every tracked step, the rows touched on
  /// any rank and their lookup counts are merged with one allgather (in an EmbeddingHub, one for
  /// all its tables of this group), and each rank updates the state of every row touched in
  /// the job, so report() describes the job (the same on every rank; rank 0's is the one to
  /// keep). Every rank then calls step() alike. Null: one process.
  ProcessGroupPtr process_group;
};

class EmbeddingTracker {
 public:
  /// Tracks `module` (Embedding or EmbeddingBag) under the name `layer`. Throws Error for any
  /// other module or a weight that is not on the CPU or not floating point.
  EmbeddingTracker(std::shared_ptr<::torch::nn::Module> module, std::string layer,
                   EmbeddingTrackerOptions options = {});
  template <class Impl>
  EmbeddingTracker(const ::torch::nn::ModuleHolder<Impl>& module, std::string layer,
                   EmbeddingTrackerOptions options = {})
      : EmbeddingTracker(std::static_pointer_cast<::torch::nn::Module>(module.ptr()),
                         std::move(layer), std::move(options)) {}
  ~EmbeddingTracker();
  EmbeddingTracker(const EmbeddingTracker&) = delete;
  EmbeddingTracker& operator=(const EmbeddingTracker&) = delete;

  /// Embedding: runs the module on `indices` and observes them in `role`.
  at::Tensor forward(const at::Tensor& indices, Role role = Role::kLookup);
  /// EmbeddingBag: runs the module and observes `input`.
  at::Tensor forward(const at::Tensor& input, const at::Tensor& offsets,
                     const at::Tensor& per_sample_weights = {});
  /// Notes that `indices` were looked up this step in `role` (call once per forward you ran
  /// yourself). Throws Error for non-integer indices, one outside [0, rows) or a weight of
  /// another shape.
  void observe(const at::Tensor& indices, Role role = Role::kLookup);

  /// After backward: reads the touched rows' gradient, applies auto-fix, snapshots the rows.
  void before_step();
  /// After the optimizer step: reads the rows again and folds the real update into the state.
  void after_step();
  /// before_step(); optimizer.step(); after_step().
  void step(::torch::optim::Optimizer& optimizer);
  void step(const std::function<void()>& apply_update);

  /// Steps completed (after_step calls).
  int64_t current_step() const;
  const std::string& layer() const;
  /// The per-row state.
  const EmbeddingRows& rows() const;
  /// (step, L2 of the touched rows' gradient) per tracked step; NaN when undefined.
  const std::vector<std::pair<int64_t, double>>& gradient_norms() const;
  /// Rows touched at the last tracked step, ascending.
  const std::vector<int64_t>& touched_rows() const;
  /// Diagnostics over every tracked step, with the effective rank of sampled rows. report()
  /// uses options' thresholds, zombie_rule and negative_sampler.
  EmbeddingReport report(const EmbeddingRuleOptions& rules) const;
  EmbeddingReport report() const;
  /// What the tracker could not measure (an undefined gradient at a tracked step) and which
  /// verdicts its options make unreachable so far: a zombie_window needing more real updates
  /// than the steps tracked, negatives on a table with no other lookups for a popularity
  /// sampler. O(rows) when a popularity sampler is declared.
  std::vector<std::string> warnings() const;

  struct State;

 private:
  friend class EmbeddingHub;  // steps its tables' merges across ranks together
  std::unique_ptr<State> state_;
};

/// Several tables tracked together (two towers, several feature tables): one step call and
/// the correlation over steps between every pair's gradient norms. Across ranks, the tables
/// that share a process group merge their touched rows in one collective per step.
class EmbeddingHub {
 public:
  EmbeddingHub();
  ~EmbeddingHub();
  EmbeddingHub(EmbeddingHub&&) noexcept;
  EmbeddingHub& operator=(EmbeddingHub&&) noexcept;

  /// Starts tracking a table; the hub owns the tracker.
  EmbeddingTracker& track(std::shared_ptr<::torch::nn::Module> module, std::string layer,
                          EmbeddingTrackerOptions options = {});
  template <class Impl>
  EmbeddingTracker& track(const ::torch::nn::ModuleHolder<Impl>& module, std::string layer,
                          EmbeddingTrackerOptions options = {}) {
    return track(std::static_pointer_cast<::torch::nn::Module>(module.ptr()), std::move(layer),
                 std::move(options));
  }
  /// The tracker of `layer`; throws Error naming it when unknown.
  EmbeddingTracker& operator[](const std::string& layer);
  /// before_step() on every table, optimizer.step(), after_step() on every table; the tables
  /// of one process group merge across ranks in one collective (as many allgathers as a lone
  /// tracker takes, not one per table). A collective: every rank calls it alike.
  void step(::torch::optim::Optimizer& optimizer);
  void step(const std::function<void()>& apply_update);
  /// Every table's report, each judged with its own tracker's options (as its report()), and
  /// the pairwise gradient-norm correlations.
  EmbeddingHubReport report() const;
  /// Same, every table judged with `rules`.
  EmbeddingHubReport report(const EmbeddingRuleOptions& rules) const;

 private:
  EmbeddingHubReport with_correlations(EmbeddingHubReport out) const;
  struct Groups;  // the tables of each process group, and its merger
  std::vector<std::unique_ptr<EmbeddingTracker>> trackers_;
  std::unique_ptr<Groups> groups_;
};

}  // namespace gradscope::torch
