// The bindings of compression: recipes, their search and packed models.
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

// Packed models: their files, sizes, save and load.
void bind_packed(py::module_& m) {
  namespace cz = gradscope::compress;
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
  bind_packed(m);
}

}  // namespace gradscope::python
