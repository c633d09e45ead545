// Audit: per-module gradient health of a LibTorch model, cheap enough for every step.
//
//   gradscope::torch::Audit audit(model);             // RAII: hooks go when audit does
//   for (...) {
//     optimizer.zero_grad();
//     auto y = audit.forward(*model, x);              // Sequential: every child captured
//     loss_fn(y, target).backward();                  // custom modules: x = audit.tap("enc", x)
//     audit.step(optimizer);                          // = optimizer.step() + measurements
//   }
//   std::cout << gradscope::render_table(audit.report());
//
// What is recorded: training passes only (docs/guide.md, "Your training loop"): a forward with
// gradients enabled through modules in training mode. Evaluation forwards (torch::NoGradGuard,
// model->eval()) and everything inside a Pause are not; a forward that activation
// checkpointing recomputes inside backward is recorded once. Mixed precision: set_loss_scale.
//
// Nodes: by default each direct child of the model that owns parameters ("encoder"); scoped
// submodules inside a node get ids like "encoder/backbone.0". What is measured per audited
// step: activations and output gradients of tapped nodes; parameter gradients after backward
// has accumulated them, parameter norms, and the real update across the optimizer step.
#pragma once

#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>

namespace torch::nn {
class MultiheadAttentionImpl;
}
#include <torch/optim/optimizer.h>

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/audit/architecture.h"
#include "gradscope/core/audit/channels.h"
#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/audit/report.h"
#include "gradscope/core/audit/run_sink.h"
#include "gradscope/torch/distributed/rank_merge.h"
#include "gradscope/torch/audit/attention_logits.h"
#include "gradscope/torch/audit/attention_query_key.h"
#include "gradscope/torch/audit/scope.h"

namespace gradscope::torch {

class InstrumentedOptimizer;  // gradscope/torch/optim/instrumented.h

/// Per-channel view of one node (opt-in): statistics along `dim`, every `every` audited steps.
struct ChannelView {
  int64_t dim = 1;
  int every = 10;
  /// Channel groups compared with each other for LEAKAGE, as [begin, end) channel ranges.
  std::vector<std::pair<int64_t, int64_t>> groups;
};

/// A parameter of which this process holds a shard (docs/distributed.md, "Sharded
/// parameters"): what FSDP2 and tensor parallelism leave a rank of a DTensor parameter.
struct ParameterShard {
  /// The whole parameter's shape: what every rank's node check compares.
  std::vector<int64_t> shape;
  /// Whether this rank's shard counts in the job's statistics: false for a copy that another
  /// rank's shard already counts (a replicated dimension of the device mesh).
  bool counted = true;
};

/// What the audit measures and how it judges.
struct AuditOptions {
  Thresholds thresholds;
  /// Audit every N-th step; other steps cost one integer test per tap.
  int sample_every = 1;
  /// Threads for one tensor's statistics pass (tensors of 256K+ elements per thread);
  /// 0 = one per hardware thread. 1 by default: the passes run between LibTorch ops, but the
  /// cores are not idle then (OpenBLAS's threads spin after each matrix product), and on two
  /// cores a second pass thread made bench-audit's every-step overhead 4 points worse
  /// (docs/benchmarks.md).
  int threads = 1;
  /// Gradient signal-to-noise per node across audited steps (opt-in: keeps one double per
  /// parameter element, 8 bytes each). SNR = ||mean_t g||^2 / mean_t ||g_t - mean_t g||^2.
  /// A parameter whose shape changes between audited steps is then an Error.
  bool gradient_snr = false;
  /// Per-node scopes; nodes not named use their type's registered scope, else auto.
  std::map<std::string, NodeScope> scopes;
  /// Channel views by node id.
  std::map<std::string, ChannelView> channels;
  /// A channel view for every top-level module node not named in `channels`.
  std::optional<ChannelView> channels_all_nodes;
  /// Pairs of branch ids whose activations are compared (linear CKA) for LEAKAGE, at the
  /// steps where channel views sample (every `leakage_every` audited steps).
  std::vector<std::pair<std::string, std::string>> leakage_pairs;
  int leakage_every = 10;
  /// Element histograms (TensorBoard's default buckets, core/audit/element_histogram.h) of every
  /// tapped node's activation and output gradient and of each node's parameter gradients
  /// (all its parameters together), every N-th audited step; 0 = off. Handed to the sink in
  /// StepRecords::histograms. At a sampled step each tensor is read once more (f16/bf16 and
  /// tensors off the CPU are first copied to a CPU float tensor); other steps cost nothing.
  int histogram_every = 0;
  /// Attention statistics (core/attention: per head the largest pre-softmax logit, the entropy
  /// and the share of queries on one key) from record_attention(), every N-th audited step;
  /// 0 = off. At other steps record_attention() returns before reading the logits. In a
  /// multi-process run every rank must measure the same nodes and heads at those steps: they
  /// are merged across ranks (counts and sums add, the largest logit is the job's).
  int attention_every = 10;
  /// Ids that may be tapped without being modules (functional ops, e.g. "attention_scores").
  std::vector<std::string> free_nodes;
  /// Called at the end of every audited step with that step's records (a run store wants
  /// `sink`, which also gets the channel and similarity records and the summary). With a
  /// process group and merge_async, one audited step later (see merge_async).
  std::function<void(const std::vector<Record>&)> on_step;
  /// Records, channel records and similarity records kept in memory for records(),
  /// channel_records() and similarity_records(): those of the last `keep_steps` audited steps
  /// (a ring; the oldest step goes first). A record takes about 150 bytes, so 100 steps of a
  /// model of 10 nodes with 4 sites each keep about 600 KB. 0 keeps every step (memory grows
  /// with the run). report() needs none of them: it judges per-node aggregates updated as
  /// each step ends, so it covers every audited step however many are kept. A million audited
  /// steps of a 10-node model with a RunWriter attached grow the resident set by less than
  /// 64 MiB, nearly all of it the writer's queue (tests/torch/audit_memory_test.cpp).
  int64_t keep_steps = 100;
  /// false: keep no records in memory at all (a sink or on_step persists them); report() is
  /// the same.
  bool keep_records = true;
  /// Gets every audited step as it ends (records, channel and similarity records), and the
  /// run's summary from finish(): e.g. a RunWriter, so the saved run holds the whole report.
  /// Not owned; it must outlive the audit's last step() and finish(), and with a process group
  /// and merge_async the Audit itself (its destructor hands over a step still in flight).
  RunSink* sink = nullptr;
  /// Many processes (docs/distributed.md): every audited step's records are merged across the
  /// group's ranks, so records(), report() and on_step describe the whole job on every rank.
  /// Only rank 0 hands steps and the summary to `sink`. Every rank constructs its Audit (a
  /// collective: it checks that all audit the same nodes, dtypes and shapes, else throws Error
  /// naming the difference) and step()s the same steps.
  ProcessGroupPtr process_group;
  /// With a process group: true leaves each audited step's collective in flight while the
  /// next step computes, and waits for it at the next audited step's step() (or at report(),
  /// records(), channel_records(), similarity_records(), warnings(), flush(), finish() or the
  /// destructor, whichever comes first): on_step and `sink` then get step N during step N+1's
  /// step(), and a dead rank's error, naming step N, comes from there. false waits at step N's
  /// own step(), as a single process does. Channel-view and histogram steps wait for the
  /// ranks' sizes in their own step() either way. Off by default: it moves on_step and the
  /// dead-rank error one step later, where a job's own next collective may fail first
  /// (docs/distributed.md).
  bool merge_async = false;
  /// Many processes: the ranks average their parameter gradients, as DDP's all-reduce does.
  /// Each rank's output gradients are then world_size times those of the one-process run DDP
  /// stands for (whose loss is the mean of the ranks' losses), so they are divided by
  /// world_size, and the merged output-gradient statistics equal that run's. false for a job
  /// that sums the ranks' gradients (and the output gradients are left as measured).
  bool ranks_average_gradients = true;

  /// Many processes: the most bytes one rank sends per audited step to make the effective
  /// ranks of channel views and the CKA of channel groups and leakage pairs the job's exactly
  /// (docs/distributed.md); a measurement that would pass it keeps each rank's own value, with
  /// a warning. Every rank needs the same value. 0: none is merged.
  int64_t merge_spectra_max_bytes = int64_t{16} << 20;

  /// Many processes: the parameters this rank holds a shard of, by name ("<node id>.<parameter
  /// path>"; the tensor registered is the shard). A node holding one merges its parameter
  /// statistics (values, gradients, updates, gradient histograms) as the sum of the ranks'
  /// counted shards, never "once when every rank has the same bits", so the job's record is the
  /// whole parameter's. Needs process_group; the Python Audit fills it from DTensor parameters.
  std::map<std::string, ParameterShard> parameter_shards;

  /// Many processes: every rank runs the same samples, each a slice of the layers (tensor
  /// parallelism over the whole group; docs/distributed.md). A sample-side record (activations,
  /// output gradients, their histograms, attention heads) then counts once when every rank holds
  /// the same bits (a replicated output), and otherwise is a slice of the layer's: its counts add
  /// (features split across ranks) and attention heads are concatenated in rank order. Output
  /// gradients are not divided by world_size (ranks_average_gradients is for split batches).
  /// Channel views and leakage pairs are refused with it. The Python Audit sets it when the
  /// model has tensor-parallel DTensor parameters.
  bool ranks_share_batch = false;
};

class Audit {
 public:
  /// Audits `model`: nodes are its direct children that own parameters (or the model itself
  /// when it has no children).
  explicit Audit(std::shared_ptr<::torch::nn::Module> model, AuditOptions options = {});
  template <class Impl>
  explicit Audit(const ::torch::nn::ModuleHolder<Impl>& model, AuditOptions options = {})
      : Audit(std::static_pointer_cast<::torch::nn::Module>(model.ptr()), std::move(options)) {}
  /// Standalone mode: exactly these (id, module) pairs are the nodes.
  Audit(std::vector<std::pair<std::string, std::shared_ptr<::torch::nn::Module>>> nodes,
        AuditOptions options = {});
  /// Removes every hook the audit installed; hooks still attached to live tensors become
  /// inert. Safe during stack unwinding. With a merge in flight (merge_async) it waits for it
  /// (a dead rank: at most the group's timeout) and hands the step over; it never throws: a
  /// failed merge is written to stderr.
  ~Audit();
  Audit(const Audit&) = delete;
  Audit& operator=(const Audit&) = delete;

  /// Records `x` as the output of node `id` (activation now, output gradient in backward)
  /// and returns it unchanged. Throws Error naming the node for an unknown id (with the
  /// nearest ones), an undefined tensor, a channel view that does not fit `x`, or a leakage
  /// pair tapped with another number of samples at the same step; a tap that throws records
  /// nothing.
  at::Tensor tap(const std::string& id, const at::Tensor& x);
  /// Same, with the id looked up from the module (for ModuleList loops).
  at::Tensor tap(const ::torch::nn::Module& module, const at::Tensor& x);
  /// Records `x` as the pre-activation of node `id` (the input of a squashing function such
  /// as tanh or sigmoid, judged for SATURATED) when the node is audited this step. For
  /// adapters that run the forward themselves (the Python hooks); forward() calls it.
  void record_pre_activation(const std::string& id, const at::Tensor& x);
  /// Records the attention of node `id` from its pre-softmax logits, [batch, heads, queries,
  /// keys] or [heads, queries, keys], at the steps AuditOptions::attention_every samples (a
  /// module called twice in a step, or micro-batches, merge). `mask`, if defined, broadcasts to
  /// the logits: bool, true where a query may attend (as scaled_dot_product_attention takes
  /// it), or floating point, added to the logits (-inf hides a key). Throws Error naming the
  /// node for an unknown id, logits of another rank, a mask that does not broadcast, or another
  /// number of heads than earlier.
  void record_attention(const std::string& id, const at::Tensor& logits, const at::Tensor& mask = {});
  /// Records the attention of a torch::nn::MultiheadAttention call on node `id`: at the steps
  /// attention_step() says, the logits are computed from the call's `query` and `key` ([L, N, E]
  /// and [S, N, E], as the module takes them) with the module's q and k projections, under the
  /// call's masks as the module applies them (`attn_mask` [L, S] or [N * heads, L, S], float,
  /// added: -inf hides a key; `key_padding_mask` [N, S], bool true hides). Call it before or
  /// after the module's forward with the same arguments. A bool attn_mask is refused: LibTorch
  /// 1.13's module adds it to the logits (0 or 1), so it hides nothing there. A module that
  /// appends keys of its own (add_bias_kv, add_zero_attn) is refused.
  void record_attention(const std::string& id, const ::torch::nn::MultiheadAttentionImpl& attention,
                        const at::Tensor& query, const at::Tensor& key, const at::Tensor& attn_mask = {},
                        const at::Tensor& key_padding_mask = {});
  /// The same for one call of any multi-head attention given its inputs and q and k
  /// projections (torch/audit/attention_logits.h; the Python hook for nn.MultiheadAttention):
  /// the logits are projected only when the node's attention is measured now.
  void record_attention(const ProjectedAttention& call);
  /// Records the attention of a scaled_dot_product_attention call on node `id` from its q and
  /// k (torch/audit/attention_query_key.h): shapes, dtypes, devices and the mask are checked at
  /// every call (no element is read), the logits computed in blocks of queries only when the
  /// node's attention is measured now. Throws Error naming the node and the tensor.
  void record_attention(const std::string& id, const QueryKeyAttention& call);
  /// Whether record_attention() measures at the step being recorded (callers that must first
  /// compute the logits, as the Python hook for nn.MultiheadAttention, skip the work otherwise).
  bool attention_step() const;
  /// Runs a Sequential child by child and taps each audited child's output; parameter-free
  /// children (activations, dropout) belong to the audited child before them; when the next
  /// one is Tanh, Sigmoid, Hardtanh or Softsign, the child's own output is also recorded as
  /// its pre-activation (for SATURATED). A Sequential child that holds scoped submodules is
  /// run the same way, so they are tapped and grouped as at the top level. A child that throws
  /// LibTorch's error is named in the Error thrown instead.
  at::Tensor forward(::torch::nn::SequentialImpl& sequential, at::Tensor x);
  at::Tensor forward(const ::torch::nn::Sequential& sequential, at::Tensor x) {
    return forward(*sequential.ptr(), std::move(x));
  }

  /// Ends the step: reads the accumulated parameter gradients, runs `optimizer.step()`,
  /// measures the real update. Call once per step after backward. Throws Error, before
  /// anything runs, for an optimizer that holds none of the audited parameters (it would
  /// update another model while this one is judged STAGNANT). An instrumented optimizer
  /// (gradscope::torch::Adam) measures the parameters it updates in its own pass, and the
  /// audit takes those statistics instead of reading the parameters twice more.
  void step(::torch::optim::Optimizer& optimizer);
  /// Same for any update rule: `apply_update` changes the parameters.
  void step(const std::function<void()>& apply_update);
  /// Same, where `apply_update` steps the instrumented optimizer `measuring` (nullptr: none),
  /// whose pass measures the parameters it fuses (the Python optimizers step through this).
  void step(const std::function<void()>& apply_update, InstrumentedOptimizer* measuring);

  /// Passes the audit should not see (a validation pass that keeps gradients enabled, extra
  /// forwards for logging): from pause() to the matching resume() taps record nothing. step()
  /// is not affected: the training step around the pause is measured as usual. Pauses nest;
  /// resume() without a pause() throws Error. Audit::Pause does both for a scope.
  void pause();
  void resume();
  bool paused() const;
  class Pause {
   public:
    explicit Pause(Audit& audit) : audit_(audit) { audit_.pause(); }
    ~Pause() { audit_.resume(); }
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    Audit& audit_;
  };

  /// Mixed precision (docs/guide.md, "Your training loop"): the loss was multiplied by `scale`
  /// (> 0, finite) before backward, so the step's gradients carry that factor. Every gradient
  /// statistic (output and parameter gradients, their channel views and histograms) is then
  /// reported divided by it: bit for bit the unscaled gradient's when `scale` is a power of
  /// two. `parameter_grads_unscaled`: the parameter gradients were already divided before
  /// step() (as GradScaler::unscale_ does); output gradients always carry the scale, taken at
  /// their tap. Holds from the next tap on until changed; call it before the step's forward.
  /// A step whose parameter gradients are not finite and whose update changed no parameter
  /// is a skipped step: its gradient and update records are left out (never NAN or INF of a
  /// node) and it is counted in report().loss_scale (LOSS_SCALE_OVERFLOW). Throws Error for a
  /// scale that is not finite and positive.
  void set_loss_scale(double scale, bool parameter_grads_unscaled = false);

  /// The training loss of the step being recorded (core/series/rules.h: LOSS_SPIKE and
  /// DIVERGENCE), at every step whether the audit samples it or not; NaN and Inf are kept (a
  /// non-finite loss is a divergence). A second call in one step keeps the first value. Call
  /// it before step().
  void record_loss(double loss);
  /// Any per-step scalar, kept and stored like the loss: kBatchSeries ("batch", the index of
  /// the step's batch, named by a LOSS_SPIKE), or a series of the user's own (an auxiliary
  /// loss), shown and never judged. Throws Error for an empty name or one over 256 bytes.
  void record_scalar(const std::string& name, double value);
  /// The global L2 of the gradients as backward produced them (`before_clip`, what
  /// torch::nn::utils::clip_grad_norm_ returns) and, when known, the norm the optimizer
  /// applied after clipping (`applied`; NaN: not known). Call it before step(); clip_grad_norm
  /// does it for you.
  void record_grad_norm(double before_clip, double applied = std::numeric_limits<double>::quiet_NaN());
  /// Clips the audited parameters' gradients to a global L2 of `max_norm`, as
  /// torch::nn::utils::clip_grad_norm_ does, and records both norms; returns the norm before
  /// clipping. With a loss scaler, unscale the gradients first. Throws Error for a max_norm that
  /// is not finite and positive.
  double clip_grad_norm(double max_norm);
  /// The output layer's logits ([..., vocabulary]; any floating dtype): at the steps
  /// attention_step() says, records kLogZSeries (the mean over rows of log sum exp over the last
  /// dimension, in float32: the log-partition z-loss pulls toward 0) and kLogitMeanSeries (the
  /// mean logit), kept and stored like the loss; a drift of either is what output logit
  /// divergence looks like (Wortsman et al. 2023), invisible in the loss (softmax ignores a
  /// shift). Not judged yet: exported and stored. Not recorded under torch::NoGradGuard (an
  /// evaluation pass). Throws Error for an undefined, integer or empty tensor.
  void record_output_logits(const at::Tensor& logits);

  /// The step being recorded (number of step() calls so far).
  int64_t current_step() const;
  /// Node and submodule ids in execution order (of the first audited step).
  std::vector<std::string> node_ids() const;
  /// The records the audit keeps (AuditOptions::keep_steps: by default those of the last 100
  /// audited steps, oldest first), then those of the step being recorded. on_step (e.g. the
  /// run store) sees every step's.
  std::vector<Record> records() const;
  /// Channel and similarity records of the kept steps (keep_steps), oldest first.
  std::vector<ChannelRecord> channel_records() const;
  std::vector<SimilarityRecord> similarity_records() const;
  /// Flags and evidence over all audited steps (kept or not), nodes in execution order.
  Report report() const;
  /// Nodes with their types and parameter counts, in execution order.
  Architecture architecture() const;
  /// Warnings raised so far (e.g. a scope truncated by max_modules).
  std::vector<std::string> warnings() const;
  /// Hands options.sink the run's summary: the thresholds, architecture(), warnings() and
  /// the per-node values report() computes from the audit's state (gradient SNR). Call after
  /// the last step; a later call replaces the earlier summary. Does nothing without a sink.
  void finish() const;
  /// With a process group and merge_async: waits for the last audited step's merge and hands
  /// that step to on_step and the sink (rank 0's), as the next step() would; throws Error as
  /// step() would when it failed. Otherwise does nothing.
  void flush() const;

  struct State;

 private:
  // Summarises `logits` (masked by `mask`) into this step's attention record of `id`, the
  // node's attention being measured now (record_attention checked).
  void add_attention(const std::string& id, const at::Tensor& logits, const at::Tensor& mask);
  // Merges one call's per-head statistics into this step's attention record of `id`.
  void add_head_stats(const std::string& id, std::vector<HeadStats> heads);

  std::shared_ptr<State> state_;
};

}  // namespace gradscope::torch
