// The bindings of embedding tables: EmbeddingEngine, EmbeddingHubEngine and their rows.
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

}  // namespace

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

}  // namespace gradscope::python
