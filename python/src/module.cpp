// gradscope._engine: the module's entry (its errors, then each domain's bindings: bindings.h)
// and the helpers the bindings share. The engine itself is in engine.cpp and saved_run.cpp.
#include <pybind11/stl.h>
#include <torch/extension.h>

#include "bindings.h"
#include "gradscope/core/error.h"
#include "step_scalars.h"
#include "trees_engine.h"

namespace py = pybind11;
namespace gt = gradscope::torch;
using namespace gradscope;

std::vector<std::string> gradscope::python::flag_names(const FlagSet& flags) {
  std::vector<std::string> names;
  for (Flag f : flags.list()) names.emplace_back(flag_name(f));
  return names;
}

// A (id, type, [(path, type)], [(path, tensor)]) tuple from Python: a node, or a whole model.
gradscope::python::NodeSpec gradscope::python::node_spec(const py::tuple& n) {
  return {n[0].cast<std::string>(), n[1].cast<std::string>(),
          n[2].cast<std::vector<std::pair<std::string, std::string>>>(),
          n[3].cast<std::vector<std::pair<std::string, at::Tensor>>>()};
}

// The c10d group behind a torch.distributed ProcessGroup object (None: none). torch binds
// ProcessGroup with pybind11 and an intrusive_ptr holder (torch/csrc/distributed/c10d/init.cpp)
// and this module uses the same pybind11 internals, so the cast hands over torch's own group.
// Anything else is an Error naming the option (True or "default" are resolved in Python).
gt::ProcessGroupPtr gradscope::python::process_group_of(const py::handle& group, const std::string& who) {
  if (group.is_none()) return {};
  try {
    return group.cast<gt::ProcessGroupPtr>();
  } catch (const py::cast_error&) {
    throw Error(who + ": process_group must be a torch.distributed ProcessGroup (dist.new_group(), "
                "dist.group.WORLD) or None, got " + std::string(py::str(py::type::handle_of(group).attr("__name__"))));
  }
}

// The group as Python's object again (torch keeps one Python object per group), or None.
py::object gradscope::python::process_group_object(const gt::ProcessGroupPtr& group) {
  return group ? py::cast(group) : py::none();
}

// The run Python names as (dir, name, command line, overwrite), or none.
std::optional<gradscope::python::RunSpec> gradscope::python::run_spec_of(const py::object& run) {
  if (run.is_none()) return std::nullopt;
  const py::tuple r = run.cast<py::tuple>();
  return python::RunSpec{r[0].cast<std::string>(), r[1].cast<std::string>(), r[2].cast<std::string>(),
                         r[3].cast<bool>()};
}

PYBIND11_MODULE(_engine, m) {
  m.doc() = "gradscope's C++ engine (kernels, rules, run store) for PyTorch tensors";
  auto error = py::register_exception<gradscope::Error>(m, "Error", PyExc_RuntimeError);
  py::register_exception<gradscope::HealthError>(m, "HealthError", error.ptr());
  gradscope::python::bind_stats(m);
  gradscope::python::bind_thresholds(m);
  gradscope::python::bind_report(m);
  gradscope::python::bind_audit(m);
  gradscope::python::bind_embedding(m);
  gradscope::python::bind_compress(m);
  gradscope::python::bind_trees(m);
  gradscope::python::bind_step_scalars(m);
}
