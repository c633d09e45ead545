// The bindings of what is measured and judged: Stats, Thresholds, the report and its renderings.
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

namespace {

// The loss and gradient-norm series: spikes, the nodes that moved first, the series' report.
void bind_series(py::module_& m) {
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
}

}  // namespace

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
  bind_series(m);
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

}  // namespace gradscope::python
