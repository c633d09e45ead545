// The tree bindings (trees_engine.h). Rows cross as float64 numpy arrays (a copy: TreeData owns
// its rows, and the dynamics read every row once per tree, so the copy is a small part of the
// cost); parsing, analysis and writing let the GIL go, as they touch no Python object.
#include "trees_engine.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/error.h"
#include "gradscope/core/trees/dynamics.h"
#include "gradscope/core/trees/loss.h"
#include "gradscope/core/trees/model.h"
#include "gradscope/core/trees/thresholds.h"
#include "gradscope/io/trees/store.h"
#include "gradscope/io/trees/text.h"
#include "gradscope/trees/read_model.h"

namespace py = pybind11;

namespace gradscope::python {
namespace {

using Rows = py::array_t<double, py::array::c_style | py::array::forcecast>;
using release_gil = py::call_guard<py::gil_scoped_release>;

// Every format by its name (read_model.h's model_format_name), so Python says "xgboost-ubjson".
ModelFormat format_of(const std::string& name) {
  for (const ModelFormat f : {ModelFormat::kAuto, ModelFormat::kXGBoostJson, ModelFormat::kXGBoostUbjson,
                              ModelFormat::kLightGBMText, ModelFormat::kLightGBMJson, ModelFormat::kCatBoostJson})
    if (name == model_format_name(f)) return f;
  throw Error("model format '" + name +
              "': not one of auto, xgboost-json, xgboost-ubjson, lightgbm-text, lightgbm-json, catboost-json");
}

const char* link_name(TreeLink link) {
  switch (link) {
    case TreeLink::kIdentity: return "identity";
    case TreeLink::kSigmoid: return "sigmoid";
    case TreeLink::kSoftmax: return "softmax";
    case TreeLink::kSoftmaxArgmax: return "softmax-argmax";
    case TreeLink::kExp: return "exp";
    case TreeLink::kLog1pExp: return "log1p-exp";
    case TreeLink::kHinge: return "hinge";
  }
  return "?";
}

// `x` (rows x features) and optional labels `y` (one per row) as TreeData; `what` names them in
// errors ("data: 2 dimensions expected, got 1").
TreeData rows_of(const Rows& x, const std::optional<Rows>& y, const std::string& what) {
  if (x.ndim() != 2)
    throw Error(what + ": a 2-dimensional array of rows x features expected, got " + std::to_string(x.ndim()) +
                " dimensions");
  TreeData d;
  d.rows = static_cast<std::size_t>(x.shape(0));
  d.cols = static_cast<std::size_t>(x.shape(1));
  d.x.assign(x.data(), x.data() + x.size());
  if (y) {
    if (y->ndim() != 1 || static_cast<std::size_t>(y->shape(0)) != d.rows)
      throw Error(what + ": " + std::to_string(d.rows) + " rows but labels of shape (" +
                  (y->ndim() == 1 ? std::to_string(y->shape(0)) : std::to_string(y->ndim()) + " dimensions") + ")");
    d.y.assign(y->data(), y->data() + y->size());
  }
  return d;
}

// rows x k array of one function of each row (predict_raw, or it transformed).
template <class PerRow>
py::array_t<double> per_row(const TreeEnsemble& m, const Rows& x, PerRow f) {
  const TreeData d = rows_of(x, std::nullopt, "rows");
  if (d.cols != static_cast<std::size_t>(m.num_features))
    throw Error("rows: " + std::to_string(d.cols) + " columns, the model has " + std::to_string(m.num_features) +
                " features");
  std::vector<std::vector<double>> out(d.rows);
  {
    py::gil_scoped_release release;
    for (std::size_t i = 0; i < d.rows; ++i) out[i] = f(d.row(i));
  }
  const std::size_t k = out.empty() ? static_cast<std::size_t>(m.num_outputs) : out[0].size();
  py::array_t<double> result({d.rows, k});
  auto r = result.mutable_unchecked<2>();
  for (std::size_t i = 0; i < d.rows; ++i)
    for (std::size_t j = 0; j < k; ++j) r(static_cast<py::ssize_t>(i), static_cast<py::ssize_t>(j)) = out[i][j];
  return result;
}

// One per-round measure over all rounds, as a list (NaN where it needs what the analysis lacked).
template <class Member>
std::vector<double> column(const TreeDynamicsReport& r, Member member) {
  std::vector<double> out;
  out.reserve(r.per_round.size());
  for (const RoundDynamics& round : r.per_round) out.push_back(round.*member);
  return out;
}

void bind_model(py::module_& m) {
  py::class_<TreeEnsemble>(m, "TreeModel", "A boosted tree model as gradscope reads it (core/trees/model.h).")
      .def_property_readonly("dialect", [](const TreeEnsemble& t) { return std::string(dialect_name(t.dialect)); })
      .def_readonly("objective", &TreeEnsemble::objective)
      .def_property_readonly("link", [](const TreeEnsemble& t) { return std::string(link_name(t.link)); })
      .def_readonly("booster", &TreeEnsemble::booster)
      .def_readonly("num_features", &TreeEnsemble::num_features)
      .def_readonly("num_outputs", &TreeEnsemble::num_outputs)
      .def_readonly("rounds", &TreeEnsemble::rounds)
      .def_readonly("base_score", &TreeEnsemble::base_score)
      .def_readonly("feature_names", &TreeEnsemble::feature_names)
      .def_property_readonly("trees", [](const TreeEnsemble& t) { return t.trees.size(); })
      .def_property_readonly("trees_per_round", &TreeEnsemble::trees_per_round)
      .def(
          "predict_raw",
          [](const TreeEnsemble& t, const Rows& x, int32_t rounds) {
            return per_row(t, x, [&](const double* row) { return predict_raw(t, row, rounds); });
          },
          py::arg("x"), py::arg("rounds") = -1,
          "Raw scores (margins), rows x outputs, summed as the library sums them over the first `rounds` rounds.")
      .def(
          "predict",
          [](const TreeEnsemble& t, const Rows& x, int32_t rounds) {
            return per_row(t, x,
                           [&](const double* row) { return transform_scores(t, predict_raw(t, row, rounds)); });
          },
          py::arg("x"), py::arg("rounds") = -1, "What the library's predict() returns, rows x outputs.")
      .def("__repr__", [](const TreeEnsemble& t) {
        return "TreeModel(" + std::string(dialect_name(t.dialect)) + " " + t.booster + ", objective '" + t.objective +
               "', " + std::to_string(t.rounds) + " rounds, " + std::to_string(t.num_outputs) + " outputs, " +
               std::to_string(t.num_features) + " features)";
      });
  m.def(
      "parse_tree_model",
      [](const py::bytes& data, const std::string& name, const std::string& format) {
        std::string text = data;
        py::gil_scoped_release release;
        return parse_tree_model(text, name, format_of(format));
      },
      py::arg("data"), py::arg("name") = "model", py::arg("format") = "auto",
      "A model from the bytes of its file (XGBoost JSON or UBJSON, LightGBM text or JSON, CatBoost JSON).");
  m.def(
      "read_tree_model", [](const std::string& path, const std::string& format) {
        const ModelFormat f = format_of(format);
        py::gil_scoped_release release;
        return read_tree_model(path, f);
      },
      py::arg("path"), py::arg("format") = "auto");
}

void bind_report(py::module_& m) {
  py::class_<TreeThresholds> t(m, "TreeThresholds", "What judges the rounds (core/trees/thresholds.h).");
  t.def(py::init<>()).def("validate", &TreeThresholds::validate);
  // Every threshold of the one table is an attribute.
  for (const ThresholdField<TreeThresholds>& f : tree_threshold_fields()) {
    if (f.is_integer()) t.def_readwrite(f.name, f.integer);
    else t.def_readwrite(f.name, f.real);
  }
  py::class_<TreeFinding>(m, "TreeFinding", "A tree rule's finding with its evidence.")
      .def_property_readonly("flag", [](const TreeFinding& f) { return std::string(tree_flag_name(f.flag)); })
      .def_readonly("first_round", &TreeFinding::first_round)
      .def_readonly("value", &TreeFinding::value)
      .def_readonly("threshold", &TreeFinding::threshold)
      .def_readonly("measure", &TreeFinding::measure)
      .def_readonly("detail", &TreeFinding::detail)
      .def_readonly("advice", &TreeFinding::advice)
      .def_readonly("feature", &TreeFinding::feature)
      .def_readonly("confidence", &TreeFinding::confidence)
      .def_property_readonly("tentative", &TreeFinding::tentative)
      .def("__repr__", [](const TreeFinding& f) {
        return std::string(tree_flag_name(f.flag)) + " from round " + std::to_string(f.first_round) + ": " + f.advice;
      });
  py::class_<FeatureTotal>(m, "TreeFeature", "One feature over the whole model.")
      .def_readonly("feature", &FeatureTotal::feature)
      .def_readonly("splits", &FeatureTotal::splits)
      .def_readonly("gain", &FeatureTotal::gain)
      .def_readonly("share", &FeatureTotal::share)
      .def_readonly("first_round", &FeatureTotal::first_round);
  using R = TreeDynamicsReport;
  py::class_<R>(m, "TreeReport", "Every round measured and judged (core/trees/dynamics.h).")
      .def_readonly("dialect", &R::dialect)
      .def_readonly("objective", &R::objective)
      .def_readonly("rounds", &R::rounds)
      .def_readonly("outputs", &R::outputs)
      .def_readonly("num_features", &R::num_features)
      .def_readonly("feature_names", &R::feature_names)
      .def_property_readonly("loss", [](const R& r) { return std::string(tree_loss_name(r.loss)); })
      .def_readonly("reference_rows", &R::reference_rows)
      .def_readonly("validation_rows", &R::validation_rows)
      .def_readonly("base_train_loss", &R::base_train_loss)
      .def_readonly("base_valid_loss", &R::base_valid_loss)
      .def_readonly("best_valid_rounds", &R::best_valid_rounds)
      .def_readonly("valid_rise_z", &R::valid_rise_z)
      .def_readonly("valid_rise_confidence", &R::valid_rise_confidence)
      .def_readonly("findings", &R::findings)
      .def_readonly("not_judged", &R::not_judged)
      .def_readonly("features", &R::features)
      .def_readonly("thresholds", &R::thresholds)
      .def_property_readonly("train_loss", [](const R& r) { return column(r, &RoundDynamics::train_loss); })
      .def_property_readonly("valid_loss", [](const R& r) { return column(r, &RoundDynamics::valid_loss); })
      .def_property_readonly("contribution", [](const R& r) { return column(r, &RoundDynamics::contribution); })
      .def_property_readonly("velocity", [](const R& r) { return column(r, &RoundDynamics::velocity); })
      .def_property_readonly("leaf_mean_abs", [](const R& r) { return column(r, &RoundDynamics::leaf_mean_abs); })
      .def("healthy", &R::healthy)
      .def("feature_name", &R::feature_name, py::arg("feature"));
  m.def(
      "analyze_trees",
      [](const TreeEnsemble& model, const std::optional<Rows>& x, const std::optional<Rows>& y,
         const std::optional<Rows>& valid_x, const std::optional<Rows>& valid_y, const TreeThresholds& thresholds) {
        std::optional<TreeData> train, valid;
        if (x) train = rows_of(*x, y, "data");
        else if (y) throw Error("data: labels without rows");
        if (valid_x) valid = rows_of(*valid_x, valid_y, "valid");
        py::gil_scoped_release release;
        return analyze_tree_dynamics(model, {train ? &*train : nullptr, valid ? &*valid : nullptr}, thresholds);
      },
      py::arg("model"), py::arg("x") = py::none(), py::arg("y") = py::none(), py::arg("valid_x") = py::none(),
      py::arg("valid_y") = py::none(), py::arg("thresholds") = TreeThresholds{},
      "Measures and judges every round of `model` on the rows given (analyze_tree_dynamics).");
}

void bind_run(py::module_& m) {
  py::class_<TreeRunSummary>(m, "TreeRun", "A tree run: what it was made from and its analysis (io/trees/store.h).")
      .def(py::init([](std::string model, std::string data, std::string validation, std::string label,
                       TreeDynamicsReport report) {
             return TreeRunSummary{std::move(model), std::move(data), std::move(validation), std::move(label),
                                   std::move(report)};
           }),
           py::arg("model"), py::arg("data"), py::arg("validation"), py::arg("label"), py::arg("report"))
      .def_readonly("model", &TreeRunSummary::model)
      .def_readonly("data", &TreeRunSummary::data)
      .def_readonly("validation", &TreeRunSummary::validation)
      .def_readonly("label", &TreeRunSummary::label)
      .def_readonly("report", &TreeRunSummary::report)
      .def("timeline", &render_tree_timeline)
      .def("findings_text", &render_tree_findings)
      .def("verdict", &tree_run_verdict)
      .def("json", &render_tree_json, py::arg("indent") = 2);
  m.def(
      "write_tree_run",
      [](const std::string& dir, const TreeRunSummary& run, const std::string& name, bool overwrite,
         const std::string& command_line) {
        RunWriterOptions o;
        o.name = name;
        o.overwrite = overwrite;
        o.command_line = command_line;
        py::gil_scoped_release release;
        write_tree_run(dir, run, o);
      },
      py::arg("dir"), py::arg("run"), py::arg("name") = "", py::arg("overwrite") = false,
      py::arg("command_line") = "", "Writes the run as `gradscope trees` does: report, html, ls and diff read it.");
  m.def("load_tree_run", &load_tree_summary, py::arg("dir"), release_gil(),
        "The tree run saved in `dir`, or None when it holds none.");
}

}  // namespace

void bind_trees(py::module_& m) {
  bind_model(m);
  bind_report(m);
  bind_run(m);
}

}  // namespace gradscope::python
