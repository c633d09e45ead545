// The module's bindings, one file a domain as the C++ folders are (bind_report.cpp,
// bind_audit.cpp, bind_embedding.cpp, bind_compress.cpp; trees_engine.cpp, step_scalars.cpp),
// and the helpers they share (module.cpp).
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "engine.h"
#include "gradscope/core/vocabulary/flags.h"
#include "gradscope/torch/distributed/rank_merge.h"

namespace gradscope::python {

// For every call that may meet a process group (a collective, or a wait on one): the GIL is
// let go while it runs. Gloo's worker threads need the GIL to free the Python object of a
// tensor an earlier collective held last (torch's own collectives let it go for the same
// reason); a call waiting on the group with the GIL held deadlocks with them
// (tests/python/test_distributed.py). Python callbacks (optimizer.step, on_step) take it back
// themselves: pybind11's std::function wrapper acquires it around each call.
using release_gil = pybind11::call_guard<pybind11::gil_scoped_release>;

/// The names of a set of flags, in enum order.
std::vector<std::string> flag_names(const FlagSet& flags);
/// A (id, type, [(path, type)], [(path, tensor)]) tuple from Python: a node, or a whole model.
NodeSpec node_spec(const pybind11::tuple& n);
/// The c10d group behind a torch.distributed ProcessGroup object (None: none); anything else
/// is an Error naming `who`'s option.
gradscope::torch::ProcessGroupPtr process_group_of(const pybind11::handle& group, const std::string& who);
/// The run Python names as (dir, name, command line, overwrite), or none.
std::optional<RunSpec> run_spec_of(const pybind11::object& run);
/// The group as Python's object again (torch keeps one Python object per group), or None.
pybind11::object process_group_object(const gradscope::torch::ProcessGroupPtr& group);

void bind_stats(pybind11::module_& m);
void bind_thresholds(pybind11::module_& m);
void bind_report(pybind11::module_& m);
void bind_audit(pybind11::module_& m);
void bind_embedding(pybind11::module_& m);
void bind_compress(pybind11::module_& m);

}  // namespace gradscope::python
