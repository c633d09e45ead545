// gradscope._engine: the pybind11 bindings. The one translation unit that includes
// torch/extension.h (slow to compile); the engine itself is in engine.cpp and saved_run.cpp.
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

namespace py = pybind11;

// For every call that may meet a process group (a collective, or a wait on one): the GIL is
// let go while it runs. Gloo's worker threads need the GIL to free the Python object of a
// tensor an earlier collective held last (torch's own collectives let it go for the same
// reason); a call waiting on the group with the GIL held deadlocks with them
// (tests/python/test_distributed.py). Python callbacks (optimizer.step, on_step) take it back
// themselves: pybind11's std::function wrapper acquires it around each call.
using release_gil = py::call_guard<py::gil_scoped_release>;
using namespace gradscope;
namespace gt = gradscope::torch;
using gradscope::python::AuditEngine;
using gradscope::python::EmbeddingEngine;
using gradscope::python::EmbeddingHubEngine;

namespace {

std::vector<std::string> flag_names(const FlagSet& flags) {
  std::vector<std::string> names;
  for (Flag f : flags.list()) names.emplace_back(flag_name(f));
  return names;
}

// A (id, type, [(path, type)], [(path, tensor)]) tuple from Python: a node, or a whole model.
python::NodeSpec node_spec(const py::tuple& n) {
  return {n[0].cast<std::string>(), n[1].cast<std::string>(),
          n[2].cast<std::vector<std::pair<std::string, std::string>>>(),
          n[3].cast<std::vector<std::pair<std::string, at::Tensor>>>()};
}

// The c10d group behind a torch.distributed ProcessGroup object (None: none). torch binds
// ProcessGroup with pybind11 and an intrusive_ptr holder (torch/csrc/distributed/c10d/init.cpp)
// and this module uses the same pybind11 internals, so the cast hands over torch's own group.
// Anything else is an Error naming the option (True or "default" are resolved in Python).
gt::ProcessGroupPtr process_group_of(const py::handle& group, const std::string& who) {
  if (group.is_none()) return {};
  try {
    return group.cast<gt::ProcessGroupPtr>();
  } catch (const py::cast_error&) {
    throw Error(who + ": process_group must be a torch.distributed ProcessGroup (dist.new_group(), "
                "dist.group.WORLD) or None, got " + std::string(py::str(py::type::handle_of(group).attr("__name__"))));
  }
}

// The group as Python's object again (torch keeps one Python object per group), or None.
py::object process_group_object(const gt::ProcessGroupPtr& group) {
  return group ? py::cast(group) : py::none();
}

void bind_stats(py::module_& m) {
  py::class_<Stats>(m, "Stats", "A mergeable summary of one tensor (gradscope::Stats).")
      .def_readonly("count", &Stats::count)
      .def_readonly("finite", &Stats::finite)
      .def_readonly("nan", &Stats::nan)
      .def_readonly("pos_inf", &Stats::pos_inf)
      .def_readonly("neg_inf", &Stats::neg_inf)
      .def_readonly("zero", &Stats::zero)
      .def_readonly("saturated", &Stats::saturated)
      .def_readonly("sum", &Stats::sum)
      .def_readonly("sum_sq", &Stats::sum_sq)
      .def_readonly("sum_abs", &Stats::sum_abs)
      .def_readonly("min", &Stats::min)
      .def_readonly("max", &Stats::max)
      .def_readonly("max_abs", &Stats::max_abs)
      .def_property_readonly("mean", &Stats::mean)
      .def_property_readonly("mean_abs", &Stats::mean_abs)
      .def_property_readonly("std", &Stats::stddev)
      .def_property_readonly("l2", &Stats::l2);
  m.def(
      "stats",
      [](const at::Tensor& t, double dead_eps, double saturation) {
        StatsOptions o;
        o.dead_eps = dead_eps;
        o.saturation = saturation;
        return gt::stats_of(t, "tensor", o);
      },
      py::arg("tensor"), py::arg("dead_eps") = 1e-7, py::arg("saturation") = 50.0,
      "The fused statistics pass over one CPU tensor (the same kernel the audit runs).");
  py::class_<Record>(m, "Record")
      .def_readonly("step", &Record::step)
      .def_readonly("node", &Record::node)
      .def_property_readonly("site", [](const Record& r) { return std::string(site_name(r.site)); })
      .def_readonly("stats", &Record::stats);
}

void bind_thresholds(py::module_& m) {
  py::class_<Thresholds> t(m, "Thresholds", "The thresholds every rule judges with (gradscope::Thresholds).");
  t.def(py::init<>())
      .def("to_json", [](const Thresholds& x) { return thresholds_to_json(x); })
      .def_static("from_json", [](const std::string& s) { return thresholds_from_json(s); })
      .def("validate", &Thresholds::validate);
// Every threshold of the one table (core/vocabulary/thresholds.h) is an attribute.
  for (const ThresholdField<Thresholds>& f : threshold_fields()) {
    if (f.is_integer()) t.def_readwrite(f.name, f.integer);
    else t.def_readwrite(f.name, f.real);
  }
}

void bind_report(py::module_& m) {
  py::class_<Evidence>(m, "Evidence")
      .def_property_readonly("flag", [](const Evidence& e) { return std::string(flag_name(e.flag)); })
      .def_property_readonly("site", [](const Evidence& e) { return std::string(site_name(e.site)); })
      .def_readonly("first_step", &Evidence::first_step)
      .def_readonly("value", &Evidence::value)
      .def_readonly("threshold", &Evidence::threshold)
      .def_readonly("measure", &Evidence::measure)
      .def_readonly("detail", &Evidence::detail)
      .def("__str__", [](const Evidence& e) { return describe_evidence(e); });
  py::class_<NodeReport>(m, "NodeReport")
      .def_readonly("node", &NodeReport::node)
      .def_readonly("steps", &NodeReport::steps)
      .def_readonly("first_step", &NodeReport::first_step)
      .def_readonly("last_step", &NodeReport::last_step)
      .def_readonly("act_mean_abs", &NodeReport::act_mean_abs)
      .def_readonly("act_std", &NodeReport::act_std)
      .def_readonly("out_grad_l2", &NodeReport::out_grad_l2)
      .def_readonly("param_grad_l2", &NodeReport::param_grad_l2)
      .def_readonly("param_l2", &NodeReport::param_l2)
      .def_readonly("grad_param_ratio", &NodeReport::grad_param_ratio)
      .def_readonly("update_ratio", &NodeReport::update_ratio)
      .def_readonly("grad_snr", &NodeReport::grad_snr)
      .def_readonly("effective_rank", &NodeReport::effective_rank)
      .def_readonly("channels", &NodeReport::channels)
      .def_readonly("dead_channels", &NodeReport::dead_channels)
      .def_readonly("nan", &NodeReport::nan)
      .def_readonly("inf", &NodeReport::inf)
      .def_readonly("evidence", &NodeReport::evidence)
      .def_property_readonly("flags", [](const NodeReport& n) { return flag_names(n.flags); })
      .def_property_readonly("label", [](const NodeReport& n) { return n.flags_label(); });
  py::class_<NonFiniteOrigin>(m, "NonFiniteOrigin", "Where NaN/Inf first appeared (gradscope::NonFiniteOrigin).")
      .def_readonly("step", &NonFiniteOrigin::step)
      .def_readonly("node", &NonFiniteOrigin::node)
      .def_readonly("phase", &NonFiniteOrigin::phase)
      .def_property_readonly("site", [](const NonFiniteOrigin& o) { return std::string(site_name(o.site)); })
      .def_readonly("rank", &NonFiniteOrigin::rank)
      .def("found", &NonFiniteOrigin::found);
  py::class_<LossScaleReport>(m, "LossScaleReport",
                              "Steps skipped by a loss scaler, and the scale (gradscope::LossScaleReport).")
      .def_readonly("steps", &LossScaleReport::steps)
      .def_readonly("skipped", &LossScaleReport::skipped)
      .def_readonly("first_skipped", &LossScaleReport::first_skipped)
      .def_readonly("last_skipped", &LossScaleReport::last_skipped)
      .def_readonly("first_fit", &LossScaleReport::first_fit)
      .def_readonly("steps_after_fit", &LossScaleReport::steps_after_fit)
      .def_readonly("skipped_after_fit", &LossScaleReport::skipped_after_fit)
      .def_readonly("trailing_skipped", &LossScaleReport::trailing_skipped)
      .def_readonly("first_scale", &LossScaleReport::first_scale)
      .def_readonly("last_scale", &LossScaleReport::last_scale)
      .def_readonly("min_scale", &LossScaleReport::min_scale)
      .def_readonly("skipped_steps", &LossScaleReport::skipped_steps)
      .def_readonly("scale_changes", &LossScaleReport::scale_changes)
      .def_property_readonly("verdict",
                             [](const LossScaleReport& r) { return loss_scale_verdict_name(r.verdict); })
      .def("found", &LossScaleReport::found);
  py::class_<SeriesSpike>(m, "SeriesSpike", "A loss or gradient above its band (gradscope::SeriesSpike).")
      .def_readonly("step", &SeriesSpike::step)
      .def_readonly("value", &SeriesSpike::value)
      .def_readonly("band_mean", &SeriesSpike::band_mean)
      .def_readonly("band_sd", &SeriesSpike::band_sd)
      .def_readonly("z", &SeriesSpike::z)
      .def_readonly("early_max", &SeriesSpike::early_max)
      .def_readonly("early_rule", &SeriesSpike::early_rule)
      .def_readonly("window_max", &SeriesSpike::window_max)
      .def_property_readonly("batch", [](const SeriesSpike& s) -> py::object {
        // A batch index is a whole number an int64 holds; anything else (a forged run) is none.
        if (!(std::fabs(s.batch) < 9.2e18) || s.batch != std::floor(s.batch)) return py::none();
        return py::int_(static_cast<int64_t>(s.batch));
      });
  py::class_<SpikeLead>(m, "SpikeLead", "A node whose gradient burst before the loss (gradscope::SpikeLead).")
      .def_readonly("node", &SpikeLead::node)
      .def_readonly("step", &SpikeLead::step)
      .def_readonly("lead", &SpikeLead::lead)
      .def_readonly("z", &SpikeLead::z)
      .def_readonly("ratio", &SpikeLead::ratio);
  py::class_<SeriesReport>(m, "SeriesReport",
                           "The loss and global gradient norms per step, and their findings (gradscope::SeriesReport).")
      .def_readonly("loss_steps", &SeriesReport::loss_steps)
      .def_readonly("first_loss_step", &SeriesReport::first_loss_step)
      .def_readonly("last_loss_step", &SeriesReport::last_loss_step)
      .def_readonly("first_loss", &SeriesReport::first_loss)
      .def_readonly("last_loss", &SeriesReport::last_loss)
      .def_readonly("min_loss", &SeriesReport::min_loss)
      .def_readonly("min_loss_step", &SeriesReport::min_loss_step)
      .def_readonly("spike_count", &SeriesReport::spike_count)
      .def_readonly("spikes", &SeriesReport::spikes)
      .def_readonly("divergence_step", &SeriesReport::divergence_step)
      .def_readonly("divergence_nonfinite", &SeriesReport::divergence_nonfinite)
      .def_readonly("divergence_value", &SeriesReport::divergence_value)
      .def_readonly("divergence_level", &SeriesReport::divergence_level)
      .def_readonly("divergence_last", &SeriesReport::divergence_last)
      .def_readonly("divergence_back", &SeriesReport::divergence_back)
      .def_readonly("first_nonfinite_loss", &SeriesReport::first_nonfinite_loss)
      .def_readonly("out_of_range_losses", &SeriesReport::out_of_range_losses)
      .def_readonly("first_out_of_range_step", &SeriesReport::first_out_of_range_step)
      .def_readonly("first_out_of_range_loss", &SeriesReport::first_out_of_range_loss)
      .def_readonly("grad_norm_steps", &SeriesReport::grad_norm_steps)
      .def_readonly("grad_norm_median", &SeriesReport::grad_norm_median)
      .def_readonly("grad_norm_p99", &SeriesReport::grad_norm_p99)
      .def_readonly("grad_norm_max", &SeriesReport::grad_norm_max)
      .def_readonly("grad_norm_max_step", &SeriesReport::grad_norm_max_step)
      .def_readonly("grad_norm_steps_before", &SeriesReport::grad_norm_steps_before)
      .def_readonly("grad_norm_median_before", &SeriesReport::grad_norm_median_before)
      .def_readonly("grad_norm_max_before", &SeriesReport::grad_norm_max_before)
      .def_readonly("clipped_steps", &SeriesReport::clipped_steps)
      .def_readonly("clip_known_steps", &SeriesReport::clip_known_steps)
      .def_readonly("leads", &SeriesReport::leads)
      .def("diverged", &SeriesReport::diverged)
      .def("onset", &SeriesReport::onset);
  py::class_<Report>(m, "Report")
      .def_readonly("steps", &Report::steps)
      .def_readonly("nodes", &Report::nodes)
      .def_readonly("nonfinite_origin", &Report::nonfinite_origin)
      .def_readonly("loss_scale", &Report::loss_scale)
      .def_readonly("series", &Report::series)
      .def_readonly("thresholds", &Report::thresholds)
      .def("healthy", &Report::healthy)
      .def("flagged_worst_first",
           [](const Report& r) {
             std::vector<std::string> ids;
             for (const NodeReport* n : r.flagged_worst_first()) ids.push_back(n->node);
             return ids;
           })
      .def("table", [](const Report& r, bool verdict) { return render_table(r, verdict); },
           py::arg("with_verdict") = true)
      .def("verdict", [](const Report& r) { return render_verdict(r); })
      .def("json", [](const Report& r, int indent) { return render_json(r, indent); }, py::arg("indent") = 2)
      .def("csv", [](const Report& r) { return render_csv(r); })
      .def("assert_healthy", [](const Report& r) { assert_healthy(r); });
  py::class_<RunMetadata>(m, "RunMetadata")
      .def_readonly("name", &RunMetadata::name)
      .def_readonly("start_time", &RunMetadata::start_time)
      .def_readonly("end_time", &RunMetadata::end_time)
      .def_readonly("host", &RunMetadata::host)
      .def_readonly("command_line", &RunMetadata::command_line)
      .def_readonly("gradscope_version", &RunMetadata::gradscope_version)
      .def_readonly("thresholds", &RunMetadata::thresholds)
      .def_readonly("queue_waits", &RunMetadata::queue_waits)
      .def_readonly("world_size", &RunMetadata::world_size)
      .def_readonly("backend", &RunMetadata::backend);
  py::class_<python::SavedRun>(m, "SavedRun")
      .def_readonly("path", &python::SavedRun::path)
      .def_readonly("metadata", &python::SavedRun::meta)
      .def_readonly("report", &python::SavedRun::report)
      .def_readonly("steps", &python::SavedRun::steps)
      .def_readonly("records", &python::SavedRun::records)
      .def_readonly("warnings", &python::SavedRun::warnings)
      .def_property_readonly("architecture", [](const python::SavedRun& r) { return r.summary.architecture.nodes; })
      .def_property_readonly("audit_warnings", [](const python::SavedRun& r) { return r.summary.warnings; });
  m.def("read_run", &python::read_run, py::arg("path"), py::arg("partial") = false,
        py::arg("with_records") = false);
}

// The run Python names as (dir, name, command line, overwrite), or none.
std::optional<python::RunSpec> run_spec_of(const py::object& run) {
  if (run.is_none()) return std::nullopt;
  const py::tuple r = run.cast<py::tuple>();
  return python::RunSpec{r[0].cast<std::string>(), r[1].cast<std::string>(), r[2].cast<std::string>(),
                         r[3].cast<bool>()};
}

void bind_audit(py::module_& m) {
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

// Per-row counts of a tracker's table (exposure, lookups, negatives, last seen), one list each,
// indexed by row: what a test or a user compares across runs and ranks.
py::dict row_counts(const gt::EmbeddingTracker& t) {
  const EmbeddingRows& rows = t.rows();
  std::vector<int64_t> exposure(rows.rows()), lookups(rows.rows()), negatives(rows.rows()), last_seen(rows.rows());
  for (int64_t r = 0; r < rows.rows(); ++r) {
    exposure[r] = rows.exposure(r);
    lookups[r] = rows.lookups(r);
    negatives[r] = rows.negatives(r);
    last_seen[r] = rows.last_seen(r);
  }
  py::dict d;
  d["exposure"] = exposure;
  d["lookups"] = lookups;
  d["negatives"] = negatives;
  d["last_seen"] = last_seen;
  return d;
}

void bind_embedding(py::module_& m) {
  py::enum_<gt::Role>(m, "Role", "Why the rows of a lookup were looked up (gradscope::torch::Role).")
      .value("LOOKUP", gt::Role::kLookup)
      .value("NEGATIVE", gt::Role::kNegative);
  py::class_<NegativeSampler>(m, "NegativeSampler",
                              "The sampler the negatives should follow, for NEGATIVE_SAMPLER_SKEW.")
      .def(py::init([](const std::string& kind, double exponent) {
             NegativeSampler s;
             if (kind == "popularity") s.kind = NegativeSampler::Kind::kPopularity;
             else if (kind != "uniform")
               throw Error("negative sampler: kind must be 'uniform' or 'popularity', got '" + kind + "'");
             s.exponent = exponent;
             return s;
           }),
           py::arg("kind") = "uniform", py::arg("exponent") = 0.75)
      .def_property_readonly("kind",
                             [](const NegativeSampler& s) {
                               return s.kind == NegativeSampler::Kind::kPopularity ? "popularity" : "uniform";
                             })
      .def_readonly("exponent", &NegativeSampler::exponent)
      .def("__repr__", [](const NegativeSampler& s) {
        return std::string("NegativeSampler('") +
               (s.kind == NegativeSampler::Kind::kPopularity ? "popularity" : "uniform") +
               "', exponent=" + py::repr(py::float_(s.exponent)).cast<std::string>() + ")";
      });
  py::class_<EmbeddingIntervention>(m, "EmbeddingIntervention", "One auto-fix act on one table at one step.")
      .def_readonly("time", &EmbeddingIntervention::time)
      .def_readonly("step", &EmbeddingIntervention::step)
      .def_readonly("layer", &EmbeddingIntervention::layer)
      .def_readonly("type", &EmbeddingIntervention::type)
      .def_readonly("rows_affected", &EmbeddingIntervention::rows_affected)
      .def_readonly("scale_min", &EmbeddingIntervention::scale_min)
      .def_readonly("scale_mean", &EmbeddingIntervention::scale_mean)
      .def_readonly("scale_max", &EmbeddingIntervention::scale_max)
      .def_readonly("snr_median", &EmbeddingIntervention::snr_median)
      .def_readonly("sample_rows", &EmbeddingIntervention::sample_rows);
  // The tracker's options with their C++ names.
  py::class_<gt::EmbeddingTrackerOptions>(m, "EmbeddingTrackerOptions")
      .def(py::init<>())
      .def_readwrite("thresholds", &gt::EmbeddingTrackerOptions::thresholds)
      .def_property(
          "windowed", [](const gt::EmbeddingTrackerOptions& o) { return o.zombie_rule == ZombieRule::kWindowed; },
          [](gt::EmbeddingTrackerOptions& o, bool w) { o.zombie_rule = w ? ZombieRule::kWindowed : ZombieRule::kGradTracer; })
      .def_readwrite("negative_sampler", &gt::EmbeddingTrackerOptions::negative_sampler)
      .def_readwrite("gradient_ema", &gt::EmbeddingTrackerOptions::gradient_ema)
      .def_readwrite("track_every", &gt::EmbeddingTrackerOptions::track_every)
      .def_readwrite("auto_fix", &gt::EmbeddingTrackerOptions::auto_fix)
      .def_readwrite("fix_min_scale", &gt::EmbeddingTrackerOptions::fix_min_scale)
      .def_readwrite("fix_max_scale", &gt::EmbeddingTrackerOptions::fix_max_scale)
      .def_readwrite("boost_undertrained", &gt::EmbeddingTrackerOptions::boost_undertrained)
      .def_readwrite("undertrained_exposure", &gt::EmbeddingTrackerOptions::undertrained_exposure)
      .def_readwrite("boost_max", &gt::EmbeddingTrackerOptions::boost_max)
      .def_readwrite("rank_sample_rows", &gt::EmbeddingTrackerOptions::rank_sample_rows)
      .def_readwrite("on_intervention", &gt::EmbeddingTrackerOptions::on_intervention)
      .def_readwrite("on_step", &gt::EmbeddingTrackerOptions::on_step)
      .def_property(
          "process_group",
          [](const gt::EmbeddingTrackerOptions& o) { return process_group_object(o.process_group); },
          [](gt::EmbeddingTrackerOptions& o, const py::object& g) {
            o.process_group = process_group_of(g, "embedding");
          });
  py::class_<EmbeddingEngine>(m, "EmbeddingEngine")
      .def(py::init([](const at::Tensor& weight, bool bag, std::optional<int64_t> padding_idx, std::string layer,
                       gt::EmbeddingTrackerOptions options, py::object run) {
             std::optional<python::RunSpec> spec = run_spec_of(run);
             py::gil_scoped_release release;
             return std::make_unique<EmbeddingEngine>(weight, bag, padding_idx, std::move(layer),
                                                      std::move(options), std::move(spec));
           }),
           py::arg("weight"), py::arg("bag"), py::arg("padding_idx"), py::arg("layer"), py::arg("options"),
           py::arg("run") = py::none())
      .def("save", &EmbeddingEngine::save, py::arg("run"), release_gil())
      .def("close", &EmbeddingEngine::close, release_gil())
      .def("observe", &EmbeddingEngine::observe, py::arg("indices"), py::arg("role") = gt::Role::kLookup)
      .def("before_step", &EmbeddingEngine::before_step)
      .def("after_step", &EmbeddingEngine::after_step, release_gil())
      .def("step", &EmbeddingEngine::step, release_gil())
      .def("current_step", &EmbeddingEngine::current_step)
      .def("report_json", [](const EmbeddingEngine& e) { return render_embedding_json(e.tracker().report()); })
      .def("warnings", [](const EmbeddingEngine& e) { return e.tracker().warnings(); })
      .def("touched_rows", [](const EmbeddingEngine& e) { return e.tracker().touched_rows(); })
      .def("row_counts", [](const EmbeddingEngine& e) { return row_counts(e.tracker()); })
      .def("gradient_norms", [](const EmbeddingEngine& e) { return e.tracker().gradient_norms(); });
  // The hub's tables are addressed by layer name: the hub owns their trackers.
  py::class_<EmbeddingHubEngine>(m, "EmbeddingHubEngine")
      .def(py::init<>())
      .def("track", &EmbeddingHubEngine::track, py::arg("weight"), py::arg("bag"), py::arg("padding_idx"),
           py::arg("layer"), py::arg("options"), release_gil())
      .def(
          "observe",
          [](EmbeddingHubEngine& h, const std::string& layer, const at::Tensor& indices, gt::Role role) {
            h[layer].observe(indices, role);
          },
          py::arg("layer"), py::arg("indices"), py::arg("role") = gt::Role::kLookup)
      .def("step", &EmbeddingHubEngine::step, release_gil())
      .def("save", &EmbeddingHubEngine::save, py::arg("run"), release_gil())
      .def("current_step", [](EmbeddingHubEngine& h, const std::string& layer) { return h[layer].current_step(); })
      .def("report_json", [](const EmbeddingHubEngine& h) { return render_embedding_hub_json(h.report()); })
      .def("table_report_json",
           [](EmbeddingHubEngine& h, const std::string& layer) { return render_embedding_json(h[layer].report()); })
      .def("warnings", [](EmbeddingHubEngine& h, const std::string& layer) { return h[layer].warnings(); })
      .def("touched_rows", [](EmbeddingHubEngine& h, const std::string& layer) { return h[layer].touched_rows(); })
      .def("row_counts", [](EmbeddingHubEngine& h, const std::string& layer) { return row_counts(h[layer]); })
      .def("gradient_norms",
           [](EmbeddingHubEngine& h, const std::string& layer) { return h[layer].gradient_norms(); });
}

void bind_compress(py::module_& m) {
  namespace cz = gradscope::compress;
  py::class_<cz::NodeProfile>(
      m, "NodeProfile", "What the compression rule reads of one node (core/compress/recipe.h).")
      .def_readonly("node", &cz::NodeProfile::node)
      .def_readonly("weight_shape", &cz::NodeProfile::weight_shape)
      .def_readonly("bias", &cz::NodeProfile::bias)
      .def_readonly("next", &cz::NodeProfile::next)
      .def_readonly("next_fan", &cz::NodeProfile::next_fan)
      .def_readonly("grad_sq", &cz::NodeProfile::grad_sq)
      .def_readonly("update_ratio", &cz::NodeProfile::update_ratio)
      .def_readonly("steps", &cz::NodeProfile::steps)
      .def_readonly("batch", &cz::NodeProfile::batch)
      .def_readonly("positions", &cz::NodeProfile::positions)
      .def_readonly("act_sq", &cz::NodeProfile::act_sq)
      .def_readonly("out_grad_sq", &cz::NodeProfile::out_grad_sq)
      .def_readonly("zero_frac", &cz::NodeProfile::zero_frac)
      .def_readonly("max_abs", &cz::NodeProfile::max_abs)
      .def_readonly("weight_sq", &cz::NodeProfile::weight_sq);
  py::class_<cz::NodeDecision>(m, "NodeDecision", "What a recipe does with one node, and why.")
      .def_readonly("node", &cz::NodeDecision::node)
      .def_readonly("weight_shape", &cz::NodeDecision::weight_shape)
      .def_readonly("bias", &cz::NodeDecision::bias)
      .def_readonly("next", &cz::NodeDecision::next)
      .def_readonly("next_fan", &cz::NodeDecision::next_fan)
      .def_property_readonly("precision", [](const cz::NodeDecision& d) { return std::string(cz::precision_name(d.precision)); })
      .def_readonly("pruned_units", &cz::NodeDecision::pruned_units)
      .def_readonly("bytes", &cz::NodeDecision::bytes)
      .def_readonly("predicted_loss", &cz::NodeDecision::predicted_loss)
      .def_readonly("premise", &cz::NodeDecision::premise)
      .def_readonly("action", &cz::NodeDecision::action)
      .def_readonly("expected_effect", &cz::NodeDecision::expected_effect);
  py::class_<cz::Recipe>(m, "Recipe", "A compression recipe: per node a precision and the units to prune.")
      .def_readonly("method", &cz::Recipe::method)
      .def_readonly("budget_bytes", &cz::Recipe::budget_bytes)
      .def_readonly("max_loss", &cz::Recipe::max_loss)
      .def_readonly("magnitude_keep", &cz::Recipe::magnitude_keep)
      .def_readonly("fp32_bytes", &cz::Recipe::fp32_bytes)
      .def_readonly("bytes", &cz::Recipe::bytes)
      .def_readonly("predicted_loss", &cz::Recipe::predicted_loss)
      .def_readonly("nodes", &cz::Recipe::nodes)
      .def("to_json", [](const cz::Recipe& r, int indent) { return render_recipe_json(r, indent); },
           py::arg("indent") = 2)
      .def_static("from_json", &parse_recipe_json, py::arg("text"), py::arg("source") = "recipe")
      .def_static(
          "load",
          [](const py::object& path) { return load_recipe(py::module_::import("os").attr("fspath")(path).cast<std::string>()); },
          py::arg("path"));
  py::class_<cz::AppliedNode>(m, "AppliedNode")
      .def_readonly("node", &cz::AppliedNode::node)
      .def_property_readonly("precision", [](const cz::AppliedNode& n) { return std::string(cz::precision_name(n.precision)); })
      .def_readonly("kept_units", &cz::AppliedNode::kept_units)
      .def_readonly("kept_weights", &cz::AppliedNode::kept_weights)
      .def_readonly("bytes", &cz::AppliedNode::bytes);
  py::class_<cz::Applied>(m, "Applied")
      .def_readonly("bytes", &cz::Applied::bytes)
      .def_readonly("fp32_bytes", &cz::Applied::fp32_bytes)
      .def_readonly("nodes", &cz::Applied::nodes);
  m.def(
      "make_recipe",
      [](const std::vector<cz::NodeProfile>& profiles, int64_t budget_bytes, double max_loss, bool use_fisher,
         bool use_unit_saliency) {
        cz::RuleOptions o;
        o.use_fisher = use_fisher;
        o.use_unit_saliency = use_unit_saliency;
        return cz::make_recipe(profiles, cz::Budget{budget_bytes, max_loss}, o);
      },
      py::arg("profiles"), py::arg("budget_bytes"), py::arg("max_loss"), py::arg("use_fisher") = true,
      py::arg("use_unit_saliency") = true);
  m.def("load_run_compress_profile", &load_run_compress_profile, py::arg("run"));
  m.def("save_compress_profile", &save_compress_profile, py::arg("run"), py::arg("profiles"));
  m.def(
      "apply_recipe",
      [](const py::tuple& model, const cz::Recipe& recipe, const cz::InputGrams& grams) {
        return python::apply_recipe(node_spec(model), recipe, grams);
      },
      py::arg("model"), py::arg("recipe"), py::arg("grams") = cz::InputGrams{});
  py::class_<PackedFileSize>(m, "PackedFileSize", "Sizes of a packed model file (io/compress/packed_file.h).")
      .def_readonly("header_bytes", &PackedFileSize::header_bytes)
      .def_readonly("data_bytes", &PackedFileSize::data_bytes)
      .def_readonly("file_bytes", &PackedFileSize::file_bytes)
      .def("__repr__", [](const PackedFileSize& s) {
        return "PackedFileSize(file_bytes=" + std::to_string(s.file_bytes) + ", data_bytes=" + std::to_string(s.data_bytes) +
               ", header_bytes=" + std::to_string(s.header_bytes) + ")";
      });
  m.def(
      "save_packed",
      [](const std::vector<std::pair<std::string, at::Tensor>>& state, const std::optional<cz::Recipe>& recipe,
         const std::string& path, const cz::InputGrams& grams) {
        py::gil_scoped_release release;
        return write_packed(path, cz::pack_state(state, recipe ? *recipe : cz::Recipe{}, grams));
      },
      py::arg("state"), py::arg("recipe"), py::arg("path"), py::arg("grams") = cz::InputGrams{});
  m.def(
      "read_packed_tensors",
      [](const std::string& path) {
        // Every tensor of a packed (or any safetensors) file as read_packed reads it: (name,
        // dtype, shape, bytes), for checks against other readers (tests/python/test_safetensors.py).
        compress::PackedModel packed;
        {
          py::gil_scoped_release release;
          packed = read_packed(path);
        }
        py::list out;
        for (const compress::StoredTensor& t : packed.tensors)
          out.append(py::make_tuple(t.name, t.dtype, t.shape,
                                    py::bytes(reinterpret_cast<const char*>(t.data.data()), t.data.size())));
        return out;
      },
      py::arg("path"));
  m.def(
      "load_packed_state",
      [](const std::string& path, const std::vector<std::pair<std::string, at::Tensor>>& model) {
        const std::vector<cz::EntryShape> entries = cz::entry_shapes(model);
        py::gil_scoped_release release;
        return cz::load_state(path, entries);
      },
      py::arg("path"), py::arg("model"));
  m.def(
      "profile_model",
      [](const py::tuple& model, const AuditEngine& audit, int64_t batch, bool chain) {
        return python::profile_model(node_spec(model), audit, batch, chain);
      },
      py::arg("model"), py::arg("audit"), py::arg("batch"), py::arg("chain") = true);
}

}  // namespace

PYBIND11_MODULE(_engine, m) {
  m.doc() = "gradscope's C++ engine (kernels, rules, run store) for PyTorch tensors";
  auto error = py::register_exception<gradscope::Error>(m, "Error", PyExc_RuntimeError);
  py::register_exception<gradscope::HealthError>(m, "HealthError", error.ptr());
  bind_stats(m);
  bind_thresholds(m);
  bind_report(m);
  bind_audit(m);
  bind_embedding(m);
  bind_compress(m);
  gradscope::python::bind_trees(m);
  gradscope::python::bind_step_scalars(m);
}
