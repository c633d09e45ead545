// The engine behind the Python module: the C++ Audit and EmbeddingTracker over tensors that
// PyTorch owns. Python names the nodes and their parameters; the engine builds a parameter-only
// LibTorch module per node (the tensors are shared, never copied) and audits those, so every
// number comes from the same kernels, rules and run store as in C++.
//
//   gradscope::python::NodeSpec fc{"fc1", "Linear", {{"", "Linear"}}, {{"weight", w}, {"bias", b}}};
//   gradscope::python::AuditEngine engine({fc}, {}, RunSpec{"runs/exp1"});
//   engine.tap("fc1", y);                 // from a forward hook
//   engine.step([&] { /* optimizer.step() */ });
//   std::cout << gradscope::render_table(engine.report());
//
// No Python here: module.cpp binds it (and is the one file that includes torch/extension.h).
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/audit/architecture.h"
#include "gradscope/core/audit/channels.h"
#include "gradscope/core/embedding/report.h"
#include "gradscope/torch/audit/attention_logits.h"
#include "gradscope/torch/audit/attention_query_key.h"
#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/audit/report.h"
#include "gradscope/core/audit/tee_sink.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/tensorboard/tensorboard_sink.h"
#include "gradscope/torch/audit/audit.h"
#include "gradscope/torch/optim/tensor_passes.h"
#include "gradscope/torch/embedding/tracker.h"

namespace gradscope::python {

/// One audited node as Python sees it: its submodules (path relative to the node, "" for the
/// node itself, and type name) and its parameters (path relative to the node).
struct NodeSpec {
  std::string id;
  std::string type;
  std::vector<std::pair<std::string, std::string>> modules;
  std::vector<std::pair<std::string, at::Tensor>> params;
};

/// The module tree of `node` with the parameters PyTorch owns (the same tensors, shared), as
/// LibTorch modules. Throws Error starting with `who` for no parameters, an undefined one or one
/// not on the CPU.
std::shared_ptr<::torch::nn::Module> build_shell(const NodeSpec& node, const std::string& who);

/// Where a run is written (a RunWriter directory) and what its metadata says.
struct RunSpec {
  std::string dir;
  std::string name;
  std::string command_line;
  bool overwrite = false;
};

/// A C++ Audit over PyTorch's tensors, with an optional run store and an optional live
/// TensorBoard event file (TensorBoardSink; both at once through a TeeSink).
class AuditEngine {
 public:
  /// Throws Error for no nodes, a node without parameters, a parameter not on the CPU, or a run
  /// or `tensorboard` directory that cannot be written. A TensorBoard write that fails later
  /// never stops training: TensorBoardSink reports it once on stderr and writes no more.
  AuditEngine(std::vector<NodeSpec> nodes, torch::AuditOptions options, std::optional<RunSpec> run,
              std::optional<std::string> tensorboard = std::nullopt);
  ~AuditEngine();

  /// Audit::tap (activation now, output gradient in backward).
  void tap(const std::string& id, const at::Tensor& x);
  /// Audit::record_pre_activation.
  void pre_activation(const std::string& id, const at::Tensor& x);
  /// Audit::record_attention (an undefined mask: none) and Audit::attention_step.
  void attention(const std::string& id, const at::Tensor& logits, const at::Tensor& mask);
  /// Audit::record_attention of one multi-head attention call (torch/audit/attention_logits.h).
  void projected_attention(const torch::ProjectedAttention& call);
  /// Audit::record_attention of one scaled_dot_product_attention call from its q and k.
  void query_key_attention(const std::string& id, const torch::QueryKeyAttention& call);
  bool attention_step();
  /// Audit::record_output_logits.
  void output_logits(const at::Tensor& logits);
  /// Audit::step; each audited step also goes to the run.
  void step(const std::function<void()>& apply_update);
  /// Audit::step with the passes of an instrumented Python optimizer that apply_update steps.
  void step_measured(const std::function<void()>& apply_update, torch::TensorPasses& passes);
  /// Audit::pause / resume / set_loss_scale.
  void pause();
  void resume();
  void set_loss_scale(double scale, bool parameter_grads_unscaled);
  /// Audit::record_loss / record_grad_norm (applied NaN: not known).
  void record_loss(double loss);
  void record_scalar(const std::string& name, double value);
  void record_grad_norm(double before_clip, double applied);
  /// Whether the current step is audited (sample_every).
  bool audited() const;
  int64_t current_step() const;

  Report report() const;
  std::vector<Record> records() const;
  /// Audit::channel_records / similarity_records (kept also after close()).
  std::vector<ChannelRecord> channel_records() const;
  std::vector<SimilarityRecord> similarity_records() const;
  std::vector<std::string> node_ids() const;
  Architecture architecture() const;
  std::vector<std::string> warnings() const;

  /// Keeps the findings, hands the run the audit's summary (Audit::finish), destroys the audit
  /// (its hooks go) and closes the TensorBoard file and the run. Idempotent.
  void close();
  bool closed() const { return !audit_; }

 private:
  const torch::Audit& audit() const;
  torch::Audit& audit();
  int sample_every_ = 1;
  std::vector<std::shared_ptr<::torch::nn::Module>> shells_;
  // Declared before audit_, so they outlive the audit that holds a pointer to one of them.
  std::unique_ptr<RunWriter> writer_;
  std::unique_ptr<tensorboard::TensorBoardSink> tensorboard_;
  std::unique_ptr<TeeSink> tee_;  // writer_ and tensorboard_, when both are given
  std::unique_ptr<torch::Audit> audit_;
  // After close(): what the audit found.
  Report report_;
  std::vector<Record> records_;
  std::vector<ChannelRecord> channel_records_;
  std::vector<SimilarityRecord> similarity_records_;
  std::vector<std::string> node_ids_, warnings_;
  Architecture architecture_;
};

/// A one-row LibTorch Embedding (or EmbeddingBag) whose weight is PyTorch's `weight`: the
/// trackers read only the weight (and the padding index). Throws Error naming `layer` for a
/// weight that is not a defined 2-D tensor.
std::shared_ptr<::torch::nn::Module> embedding_shell(const at::Tensor& weight, bool bag,
                                                     std::optional<int64_t> padding_idx,
                                                     const std::string& layer);

/// A C++ EmbeddingTracker over a PyTorch Embedding or EmbeddingBag weight.
class EmbeddingEngine {
 public:
  /// `bag`: the weight belongs to an EmbeddingBag. Throws Error for a weight the tracker
  /// cannot read (not 2-D, not on the CPU, not floating point; docs/devices.md). With `run`,
  /// the tracker writes its own run there: each tracked step's records (before the options'
  /// on_step sees them, so a callback that raises loses no step), and at close() the table's
  /// summary and findings (save_embedding_summary).
  EmbeddingEngine(const at::Tensor& weight, bool bag, std::optional<int64_t> padding_idx, std::string layer,
                  torch::EmbeddingTrackerOptions options, std::optional<RunSpec> run = std::nullopt);
  /// Writes the table's summary and findings into the run `run` (an Audit's, or any run
  /// directory holding a run.db): what `gradscope report`, ls, diff, html and lsp show.
  void save(const std::string& run) const;
  /// Closes the tracker's own run (everything committed, then its summary saved). Idempotent.
  void close();
  void observe(const at::Tensor& indices, torch::Role role) { tracker_->observe(indices, role); }
  void before_step() { tracker_->before_step(); }
  void after_step() { tracker_->after_step(); }
  void step(const std::function<void()>& apply_update) { tracker_->step(apply_update); }
  int64_t current_step() const { return tracker_->current_step(); }
  const torch::EmbeddingTracker& tracker() const { return *tracker_; }

 private:
  std::shared_ptr<::torch::nn::Module> module_;
  std::unique_ptr<RunWriter> writer_;  // the tracker's own run, until close()
  std::string run_dir_;
  std::unique_ptr<torch::EmbeddingTracker> tracker_;
};

/// A C++ EmbeddingHub over PyTorch tables: one step for all of them and the correlation of
/// their gradient norms.
class EmbeddingHubEngine {
 public:
  /// EmbeddingHub::track on embedding_shell(weight, ...); throws Error for a layer tracked twice.
  void track(const at::Tensor& weight, bool bag, std::optional<int64_t> padding_idx,
             const std::string& layer, torch::EmbeddingTrackerOptions options);
  /// The tracker of `layer` (Error naming it when unknown).
  torch::EmbeddingTracker& operator[](const std::string& layer) { return hub_[layer]; }
  void step(const std::function<void()>& apply_update) { hub_.step(apply_update); }
  EmbeddingHubReport report() const { return hub_.report(); }
  /// Writes every table's summary and findings, and their gradient-norm correlations, into
  /// the run `run` (EmbeddingEngine::save).
  void save(const std::string& run);

 private:
  std::vector<std::shared_ptr<::torch::nn::Module>> modules_;  // the shells the trackers read
  torch::EmbeddingHub hub_;
};

}  // namespace gradscope::python
