// AuditEngine and EmbeddingEngine: parameter-only LibTorch modules over PyTorch's tensors.
#include "engine.h"

#include <torch/nn/modules/embedding.h>

#include <exception>
#include <filesystem>
#include <map>

#include "gradscope/core/embedding/profile.h"
#include "gradscope/core/error.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/torch/distributed/rank_merge.h"

namespace gradscope::python {
namespace {

using ModulePtr = std::shared_ptr<::torch::nn::Module>;

// A module that only holds what Python registered: its type name, submodules and parameters.
struct Shell : ::torch::nn::Module {
  explicit Shell(std::string type) : Module(std::move(type)) {}
};

// How the run Python named is created: its name, command line and overwrite, judged with the
// adapter's thresholds.
RunWriterOptions writer_options(const RunSpec& run, const Thresholds& thresholds) {
  RunWriterOptions store;
  store.name = run.name;
  store.command_line = run.command_line;
  store.thresholds = thresholds;
  store.overwrite = run.overwrite;
  return store;
}

std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (begin <= path.size()) {
    const std::size_t dot = path.find('.', begin);
    const std::size_t end = dot == std::string::npos ? path.size() : dot;
    parts.push_back(path.substr(begin, end - begin));
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return parts;
}

}  // namespace

ModulePtr build_shell(const NodeSpec& node, const std::string& who) {
  std::map<std::string, ModulePtr> by_path;
  by_path[""] = std::make_shared<Shell>(node.type);
  auto module_at = [&](const std::string& path) -> ModulePtr {
    if (auto it = by_path.find(path); it != by_path.end()) return it->second;
    ModulePtr parent = by_path.at("");
    std::string prefix;
    for (const std::string& part : split_path(path)) {
      if (part.empty()) throw Error(who + "bad module path '" + path + "'");
      prefix += (prefix.empty() ? "" : ".") + part;
      auto it = by_path.find(prefix);
      if (it == by_path.end()) {
        ModulePtr child = std::make_shared<Shell>("Module");
        parent->register_module(part, child);
        it = by_path.emplace(prefix, child).first;
      }
      parent = it->second;
    }
    return parent;
  };
  for (const auto& [path, type] : node.modules) {
    if (path.empty() || by_path.count(path)) continue;
    const std::size_t dot = path.rfind('.');
    ModulePtr parent = dot == std::string::npos ? by_path.at("") : module_at(path.substr(0, dot));
    ModulePtr child = std::make_shared<Shell>(type);
    parent->register_module(dot == std::string::npos ? path : path.substr(dot + 1), child);
    by_path[path] = child;
  }
  if (node.params.empty()) throw Error(who + "has no parameters");
  for (const auto& [path, tensor] : node.params) {
    if (!tensor.defined()) throw Error(who + "parameter '" + path + "' is undefined");
    // Parameters on any device with data are measured there (ATen path, docs/devices.md);
    // the meta device has shapes only.
    if (tensor.is_meta())
      throw Error(who + "parameter '" + path + "' is on device meta, which holds no data to measure");
    const std::size_t dot = path.rfind('.');
    ModulePtr owner = dot == std::string::npos ? by_path.at("") : module_at(path.substr(0, dot));
    owner->register_parameter(dot == std::string::npos ? path : path.substr(dot + 1), tensor,
                              tensor.requires_grad());
  }
  return by_path.at("");
}

AuditEngine::AuditEngine(std::vector<NodeSpec> nodes, torch::AuditOptions options, std::optional<RunSpec> run,
                         std::optional<std::string> tensorboard)
    : sample_every_(options.sample_every) {
  if (nodes.empty()) throw Error("audit: no nodes to audit");
  std::vector<std::pair<std::string, ModulePtr>> pairs;
  for (const NodeSpec& n : nodes) {
    shells_.push_back(build_shell(n, "audit: node '" + n.id + "': "));
    pairs.emplace_back(n.id, shells_.back());
  }
  // Across processes only rank 0 writes (the Audit ignores the sink of every other rank): the
  // others must not create, or refuse to overwrite, the directories rank 0 writes.
  const torch::JobInfo job = torch::job_info(options.process_group);
  if (job.rank != 0) {
    run.reset();
    tensorboard.reset();
  }
  // TensorBoard first: an unwritable directory then fails before the run directory exists,
  // so a corrected retry does not find a half-made run it refuses to overwrite.
  if (tensorboard) {
    tensorboard::TensorBoardSinkOptions tb;
    tb.thresholds = options.thresholds;  // the audit's, so the flags agree with the report
    tensorboard_ = std::make_unique<tensorboard::TensorBoardSink>(*tensorboard, tb);
  }
  if (run) {
    RunWriterOptions store = writer_options(*run, options.thresholds);
    store.world_size = job.world_size;
    store.backend = job.backend;
    try {
      writer_ = std::make_unique<RunWriter>(run->dir, store);
    } catch (...) {
      // The run was refused (it exists, say): take back the event file just created, or
      // every retry would leave TensorBoard one more empty run to show.
      if (tensorboard_) {
        const std::string path = tensorboard_->path();
        tensorboard_.reset();
        std::error_code ec;
        std::filesystem::remove(path, ec);
      }
      throw;
    }
  }
  if (writer_ && tensorboard_) {
    tee_ = std::make_unique<TeeSink>(std::vector<RunSink*>{writer_.get(), tensorboard_.get()});
    options.sink = tee_.get();  // every audited step, and the summary at close(), to both
  } else if (writer_) {
    options.sink = writer_.get();
  } else if (tensorboard_) {
    options.sink = tensorboard_.get();
  }
  audit_ = std::make_unique<torch::Audit>(std::move(pairs), std::move(options));
}

AuditEngine::~AuditEngine() {
  try {
    close();
  } catch (...) {  // a destructor must not throw; close() reports the same error when called
  }
}

const torch::Audit& AuditEngine::audit() const {
  if (!audit_) throw Error("audit: closed (the with-block has ended); start a new Audit");
  return *audit_;
}
torch::Audit& AuditEngine::audit() {
  if (!audit_) throw Error("audit: closed (the with-block has ended); start a new Audit");
  return *audit_;
}

void AuditEngine::tap(const std::string& id, const at::Tensor& x) { audit().tap(id, x); }
void AuditEngine::pre_activation(const std::string& id, const at::Tensor& x) {
  audit().record_pre_activation(id, x);
}
void AuditEngine::attention(const std::string& id, const at::Tensor& logits, const at::Tensor& mask) {
  audit().record_attention(id, logits, mask);
}
bool AuditEngine::attention_step() { return audit().attention_step(); }
void AuditEngine::output_logits(const at::Tensor& logits) { audit().record_output_logits(logits); }
void AuditEngine::projected_attention(const torch::ProjectedAttention& call) {
  audit().record_attention(call);
}
void AuditEngine::query_key_attention(const std::string& id, const torch::QueryKeyAttention& call) {
  audit().record_attention(id, call);
}
void AuditEngine::step(const std::function<void()>& apply_update) { audit().step(apply_update); }

void AuditEngine::step_measured(const std::function<void()>& apply_update, torch::TensorPasses& passes) {
  audit().step(apply_update, &passes);
}
void AuditEngine::pause() { audit().pause(); }
void AuditEngine::resume() { audit().resume(); }
void AuditEngine::set_loss_scale(double scale, bool parameter_grads_unscaled) {
  audit().set_loss_scale(scale, parameter_grads_unscaled);
}
void AuditEngine::record_loss(double loss) { audit().record_loss(loss); }
void AuditEngine::record_scalar(const std::string& name, double value) { audit().record_scalar(name, value); }
void AuditEngine::record_grad_norm(double before_clip, double applied) {
  audit().record_grad_norm(before_clip, applied);
}
bool AuditEngine::audited() const { return audit_ && audit_->current_step() % sample_every_ == 0; }
int64_t AuditEngine::current_step() const { return audit_ ? audit_->current_step() : report_.steps; }

Report AuditEngine::report() const { return audit_ ? audit_->report() : report_; }
std::vector<Record> AuditEngine::records() const { return audit_ ? audit_->records() : records_; }
std::vector<ChannelRecord> AuditEngine::channel_records() const {
  return audit_ ? audit_->channel_records() : channel_records_;
}
std::vector<SimilarityRecord> AuditEngine::similarity_records() const {
  return audit_ ? audit_->similarity_records() : similarity_records_;
}
std::vector<std::string> AuditEngine::node_ids() const { return audit_ ? audit_->node_ids() : node_ids_; }
Architecture AuditEngine::architecture() const { return audit_ ? audit_->architecture() : architecture_; }
std::vector<std::string> AuditEngine::warnings() const { return audit_ ? audit_->warnings() : warnings_; }

void AuditEngine::close() {
  if (audit_) {
    std::exception_ptr failed;  // the writer's; the audit still goes, then the writer closes
    try {
      audit_->finish();
    } catch (...) {
      failed = std::current_exception();
    }
    report_ = audit_->report();
    records_ = audit_->records();
    channel_records_ = audit_->channel_records();
    similarity_records_ = audit_->similarity_records();
    node_ids_ = audit_->node_ids();
    architecture_ = audit_->architecture();
    warnings_ = audit_->warnings();
    audit_.reset();  // removes the hooks it installed; those on live activations go inert
    // Never throws: a failed write was reported once on stderr (TensorBoardSink), as in C++.
    tee_.reset();
    if (tensorboard_) std::unique_ptr<tensorboard::TensorBoardSink>(std::move(tensorboard_))->close();
    if (failed) {
      writer_.reset();  // its destructor swallows what close() would throw again
      std::rethrow_exception(failed);
    }
  }
  if (writer_) {
    std::unique_ptr<RunWriter> writer = std::move(writer_);
    writer->close();
  }
}

std::shared_ptr<::torch::nn::Module> embedding_shell(const at::Tensor& weight, bool bag,
                                                     std::optional<int64_t> padding_idx,
                                                     const std::string& layer) {
  if (!weight.defined() || weight.dim() != 2)
    throw Error("embedding '" + layer + "': weight must be a defined 2-D tensor");
  // A one-row module whose weight is then PyTorch's: the tracker reads `weight` only.
  if (bag) {
    auto m = std::make_shared<::torch::nn::EmbeddingBagImpl>(::torch::nn::EmbeddingBagOptions(1, weight.size(1)));
    m->weight = weight;
    if (padding_idx) m->options.padding_idx(*padding_idx);
    return m;
  }
  auto m = std::make_shared<::torch::nn::EmbeddingImpl>(::torch::nn::EmbeddingOptions(1, weight.size(1)));
  m->weight = weight;
  if (padding_idx) m->options.padding_idx(*padding_idx);
  return m;
}

EmbeddingEngine::EmbeddingEngine(const at::Tensor& weight, bool bag, std::optional<int64_t> padding_idx,
                                 std::string layer, torch::EmbeddingTrackerOptions options, std::optional<RunSpec> run)
    : module_(embedding_shell(weight, bag, padding_idx, layer)) {
  if (run) {
    writer_ = std::make_unique<RunWriter>(run->dir, writer_options(*run, options.thresholds));
    run_dir_ = run->dir;
    // The records go to the run before the user's callback sees them: one that raises loses
    // nothing. The tracker hands a step over in two calls (the gradient, then the update), so
    // the writer ends a step when the next one begins, or at close().
    RunWriter* writer = writer_.get();
    options.on_step = [writer, user = std::move(options.on_step)](const std::vector<Record>& records) {
      for (const Record& r : records) writer->add(r);
      if (user) user(records);
    };
  }
  tracker_ = std::make_unique<torch::EmbeddingTracker>(module_, std::move(layer), std::move(options));
}

void EmbeddingEngine::save(const std::string& run) const {
  upgrade_run(run);  // the findings go into a run (an Error naming run.db when there is none)
  const EmbeddingReport report = tracker_->report();
  EmbeddingRunSummary summary;
  summary.tables.push_back({report, profile_embedding(report.layer, tracker_->rows())});
  save_embedding_summary(run, summary);
}

void EmbeddingEngine::close() {
  if (!writer_) return;
  std::unique_ptr<RunWriter> writer = std::move(writer_);
  writer->commit();
  save(run_dir_);  // before the end time: a run that reads as finished has its findings
  writer->close();
}

void EmbeddingHubEngine::track(const at::Tensor& weight, bool bag, std::optional<int64_t> padding_idx,
                               const std::string& layer, torch::EmbeddingTrackerOptions options) {
  auto module = embedding_shell(weight, bag, padding_idx, layer);
  hub_.track(module, layer, std::move(options));
  modules_.push_back(std::move(module));  // only once the hub has accepted the table
}

void EmbeddingHubEngine::save(const std::string& run) {
  upgrade_run(run);  // as EmbeddingEngine::save
  const EmbeddingHubReport report = hub_.report();
  EmbeddingRunSummary summary;
  for (const EmbeddingReport& table : report.tables)
    summary.tables.push_back({table, profile_embedding(table.layer, hub_[table.layer].rows())});
  summary.correlations = report.correlations;
  save_embedding_summary(run, summary);
}

}  // namespace gradscope::python
