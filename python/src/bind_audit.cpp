// The bindings of the audit: its options, channel views, optimizer passes and AuditEngine.
#include <cmath>
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <optional>
#include <torch/extension.h>

#include "compress_engine.h"
#include "engine.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/core/error.h"
#include "gradscope/core/vocabulary/thresholds.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/compress/packed_file.h"
#include "gradscope/torch/compress/packed.h"
#include "gradscope/io/render/csv.h"
#include "gradscope/io/embedding/json.h"
#include "gradscope/io/render/json.h"
#include "gradscope/io/store/run_metadata.h"
#include "gradscope/io/render/table.h"
#include "gradscope/torch/distributed/rank_merge.h"
#include "gradscope/torch/tensor.h"
#include "saved_run.h"
#include "step_scalars.h"
#include "trees_engine.h"

#include "bindings.h"

namespace py = pybind11;
namespace gt = gradscope::torch;

namespace gradscope::python {

namespace {

// What an audit is told and what it keeps: options, scopes, channel and branch records, the architecture.
void bind_audit_options(py::module_& m) {
  py::class_<gt::ChannelView>(m, "ChannelView")
      .def(py::init([](int64_t dim, int every, std::vector<std::pair<int64_t, int64_t>> groups) {
             return gt::ChannelView{dim, every, std::move(groups)};
           }),
           py::arg("dim") = 1, py::arg("every") = 10, py::arg("groups") = std::vector<std::pair<int64_t, int64_t>>{})
      .def_readwrite("dim", &gt::ChannelView::dim)
      .def_readwrite("every", &gt::ChannelView::every)
      .def_readwrite("groups", &gt::ChannelView::groups);
  py::class_<gt::NodeScope>(m, "NodeScope",
                            "Which submodules inside a node get their own records (gradscope::torch::NodeScope).")
      .def(py::init([](std::optional<int> depth, std::optional<std::vector<std::string>> patterns, int sample_every,
                       int max_modules) {
             if (depth && patterns) throw Error("scope: give depth or patterns, not both");
             // to_depth checks the depth; the others are checked where the scope is resolved
             // too, but here the error points at the line that built the scope.
             gt::NodeScope s = depth      ? gt::NodeScope::to_depth(*depth)
                               : patterns ? gt::NodeScope::matching(std::move(*patterns))
                                          : gt::NodeScope::automatic();
             if (sample_every < 1) throw Error("scope: sample_every must be >= 1, got " + std::to_string(sample_every));
             if (max_modules < 0) throw Error("scope: max_modules must be >= 0, got " + std::to_string(max_modules));
             s.sample_every = sample_every;
             s.max_modules = max_modules;
             return s;
           }),
           py::arg("depth") = py::none(), py::arg("patterns") = py::none(), py::arg("sample_every") = 1,
           py::arg("max_modules") = 32)
      .def_static("automatic", &gt::NodeScope::automatic)
      .def_static("to_depth", &gt::NodeScope::to_depth, py::arg("depth"))
      .def_static("matching", &gt::NodeScope::matching, py::arg("patterns"))
      .def_static("none", &gt::NodeScope::none)
      .def_property_readonly("mode",
                             [](const gt::NodeScope& s) {
                               switch (s.mode) {
                                 case gt::NodeScope::Mode::kDepth: return "depth";
                                 case gt::NodeScope::Mode::kPatterns: return "patterns";
                                 default: return "auto";
                               }
                             })
      .def_readonly("depth", &gt::NodeScope::depth)
      .def_readonly("patterns", &gt::NodeScope::patterns)
      .def_readwrite("sample_every", &gt::NodeScope::sample_every)
      .def_readwrite("max_modules", &gt::NodeScope::max_modules)
      .def("__repr__", [](const gt::NodeScope& s) {
        std::string r = "NodeScope(";
        if (s.mode == gt::NodeScope::Mode::kDepth) r += "depth=" + std::to_string(s.depth) + ", ";
        if (s.mode == gt::NodeScope::Mode::kPatterns) r += "patterns=" + std::to_string(s.patterns.size()) + ", ";
        return r + "sample_every=" + std::to_string(s.sample_every) + ", max_modules=" +
               std::to_string(s.max_modules) + ")";
      });
  py::class_<ChannelRecord>(m, "ChannelRecord")
      .def_readonly("step", &ChannelRecord::step)
      .def_readonly("node", &ChannelRecord::node)
      .def_readonly("activation", &ChannelRecord::activation)
      .def_readonly("output_grad", &ChannelRecord::output_grad)
      .def_readonly("effective_rank", &ChannelRecord::effective_rank);
  py::class_<SimilarityRecord>(m, "SimilarityRecord")
      .def_readonly("step", &SimilarityRecord::step)
      .def_readonly("node", &SimilarityRecord::node)
      .def_readonly("other", &SimilarityRecord::other)
      .def_readonly("cka", &SimilarityRecord::cka);
  // A parameter this rank holds a shard of (FSDP2, tensor parallel): _shards.py builds them.
  py::class_<gt::ParameterShard>(m, "ParameterShard")
      .def(py::init([](std::vector<int64_t> shape, bool counted) { return gt::ParameterShard{std::move(shape), counted}; }),
           py::arg("shape"), py::arg("counted") = true)
      .def_readonly("shape", &gt::ParameterShard::shape)
      .def_readonly("counted", &gt::ParameterShard::counted);
  py::class_<gt::AuditOptions>(m, "AuditOptions")
      .def(py::init<>())
      .def_readwrite("thresholds", &gt::AuditOptions::thresholds)
      .def_readwrite("sample_every", &gt::AuditOptions::sample_every)
      .def_readwrite("threads", &gt::AuditOptions::threads)
      .def_readwrite("gradient_snr", &gt::AuditOptions::gradient_snr)
      .def_readwrite("channels", &gt::AuditOptions::channels)
      .def_readwrite("channels_all_nodes", &gt::AuditOptions::channels_all_nodes)
      .def_readwrite("leakage_pairs", &gt::AuditOptions::leakage_pairs)
      .def_readwrite("leakage_every", &gt::AuditOptions::leakage_every)
      .def_readwrite("histogram_every", &gt::AuditOptions::histogram_every)
      .def_readwrite("attention_every", &gt::AuditOptions::attention_every)
      .def_readwrite("free_nodes", &gt::AuditOptions::free_nodes)
      .def_readwrite("keep_records", &gt::AuditOptions::keep_records)
      .def_readwrite("keep_steps", &gt::AuditOptions::keep_steps)
      .def_readwrite("scopes", &gt::AuditOptions::scopes)
      .def_readwrite("on_step", &gt::AuditOptions::on_step)
      .def_readwrite("ranks_average_gradients", &gt::AuditOptions::ranks_average_gradients)
      .def_readwrite("parameter_shards", &gt::AuditOptions::parameter_shards)
      .def_readwrite("ranks_share_batch", &gt::AuditOptions::ranks_share_batch)
      .def_property(
          "process_group", [](const gt::AuditOptions& o) { return process_group_object(o.process_group); },
          [](gt::AuditOptions& o, const py::object& g) { o.process_group = process_group_of(g, "audit"); });
  py::class_<ArchitectureNode>(m, "ArchitectureNode")
      .def_readonly("id", &ArchitectureNode::id)
      .def_readonly("type", &ArchitectureNode::type)
      .def_readonly("order", &ArchitectureNode::order)
      .def_readonly("parameters", &ArchitectureNode::parameters)
      .def_readonly("trainable", &ArchitectureNode::trainable);
  // The fused optimizer passes behind gradscope.optim (docs/optimizers.md).
}

// The optimizer passes that measure what they update (gradscope.optim).
void bind_tensor_passes(py::module_& m) {
  py::class_<gt::TensorPasses>(m, "TensorPasses")
      .def(py::init<>())
      .def("take", &gt::TensorPasses::take)
      .def("drop", &gt::TensorPasses::drop)
      .def("fuses", &gt::TensorPasses::fuses)
      .def("begin", &gt::TensorPasses::begin)
      .def(
          "adam",
          [](gt::TensorPasses& passes, at::Tensor param, const at::Tensor& exp_avg, const at::Tensor& exp_avg_sq,
             double lr, double beta1, double beta2, double eps, double weight_decay, int64_t step, bool decoupled) {
            return passes.adam(param, exp_avg, exp_avg_sq, lr, beta1, beta2, eps, weight_decay, step, decoupled);
          },
          release_gil())
      .def(
          "sgd",
          [](gt::TensorPasses& passes, at::Tensor param, std::optional<at::Tensor> buffer, double lr, double momentum,
             double dampening, double weight_decay, bool nesterov, bool first) {
            return passes.sgd(param, buffer ? *buffer : at::Tensor(), lr, momentum, dampening, weight_decay, nesterov,
                              first);
          },
          release_gil());

}

}  // namespace

void bind_audit(py::module_& m) {
  bind_audit_options(m);
  bind_tensor_passes(m);
  py::class_<AuditEngine>(m, "AuditEngine")
      .def(py::init([](const std::vector<py::tuple>& nodes, gt::AuditOptions options, py::object run,
                       std::optional<std::string> tensorboard) {
             std::vector<python::NodeSpec> specs;
             for (const py::tuple& n : nodes) specs.push_back(node_spec(n));
             std::optional<python::RunSpec> spec = run_spec_of(run);
             // With a process group the constructor checks the nodes across ranks (a collective).
             py::gil_scoped_release release;
             return std::make_unique<AuditEngine>(std::move(specs), std::move(options), std::move(spec),
                                                  std::move(tensorboard));
           }),
           py::arg("nodes"), py::arg("options"), py::arg("run") = py::none(),
           py::arg("tensorboard") = py::none())
      .def("tap", &AuditEngine::tap)
      .def("pre_activation", &AuditEngine::pre_activation)
      .def("attention", [](AuditEngine& e, const std::string& id, const at::Tensor& logits,
                           std::optional<at::Tensor> mask) { e.attention(id, logits, mask ? *mask : at::Tensor()); },
           py::arg("id"), py::arg("logits"), py::arg("mask") = py::none())
      .def("attention_qk",
           [](AuditEngine& e, const std::string& id, const at::Tensor& q, const at::Tensor& k,
              std::optional<at::Tensor> mask, bool is_causal, std::optional<double> scale) {
             gt::QueryKeyAttention a;
             a.query = q;
             a.key = k;
             a.mask = mask ? *mask : at::Tensor();
             a.is_causal = is_causal;
             a.scale = scale;
             e.query_key_attention(id, a);
           },
           py::arg("id"), py::arg("q"), py::arg("k"), py::arg("mask") = py::none(), py::arg("is_causal") = false,
           py::arg("scale") = py::none())
      .def("attention_step", &AuditEngine::attention_step)
      .def("output_logits", &AuditEngine::output_logits, py::arg("logits"))
      .def("projected_attention",
           [](AuditEngine& e, const std::string& id, const at::Tensor& query, const at::Tensor& key,
              const at::Tensor& wq, std::optional<at::Tensor> bq, const at::Tensor& wk, std::optional<at::Tensor> bk,
              int64_t heads, bool batch_first, std::optional<at::Tensor> attn_mask,
              std::optional<at::Tensor> key_padding_mask) {
             gt::ProjectedAttention a;
             a.id = id;
             a.query = query;
             a.key = key;
             a.wq = wq;
             a.wk = wk;
             a.bq = bq ? *bq : at::Tensor();
             a.bk = bk ? *bk : at::Tensor();
             a.heads = heads;
             a.batch_first = batch_first;
             a.attn_mask = attn_mask ? *attn_mask : at::Tensor();
             a.key_padding_mask = key_padding_mask ? *key_padding_mask : at::Tensor();
             e.projected_attention(a);
           })
      .def("step", &AuditEngine::step, release_gil())
      .def("step_measured", &AuditEngine::step_measured, release_gil())
      .def("pause", &AuditEngine::pause)
      .def("resume", &AuditEngine::resume)
      .def("set_loss_scale", &AuditEngine::set_loss_scale, py::arg("scale"), py::arg("parameter_grads_unscaled"))
      .def("record_loss", &AuditEngine::record_loss, py::arg("loss"))
      .def("record_scalar", &AuditEngine::record_scalar, py::arg("name"), py::arg("value"))
      .def("record_grad_norm", &AuditEngine::record_grad_norm, py::arg("before_clip"), py::arg("applied"))
      .def("audited", &AuditEngine::audited)
      .def("current_step", &AuditEngine::current_step)
      .def("report", &AuditEngine::report, release_gil())
      .def("records", &AuditEngine::records, release_gil())
      .def("channel_records", &AuditEngine::channel_records, release_gil())
      .def("similarity_records", &AuditEngine::similarity_records, release_gil())
      .def("node_ids", &AuditEngine::node_ids)
      .def("architecture", [](const AuditEngine& e) { return e.architecture().nodes; })
      .def("warnings", &AuditEngine::warnings)
      .def("close", &AuditEngine::close, release_gil())
      .def("closed", &AuditEngine::closed);
}

}  // namespace gradscope::python
