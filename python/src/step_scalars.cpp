// The StepScalars binding (step_scalars.h). Records cross as the bound Record; the scalars come
// back as a dict in the order TensorBoard writes them.
#include "step_scalars.h"

#include <pybind11/stl.h>

#include <vector>

#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/vocabulary/thresholds.h"
#include "gradscope/tensorboard/step_scalars.h"

namespace py = pybind11;

namespace gradscope::python {

void bind_step_scalars(py::module_& m) {
  py::class_<tensorboard::StepScalars>(
      m, "StepScalars",
      "The scalars of each step's records as gradscope's TensorBoard events hold them: grad_l2, "
      "update_ratio, activation_*_frac and flag/<FLAG>/<node> (docs/tensorboard.md). Give it "
      "the steps in order: a flag may need the steps before.")
      .def(py::init<Thresholds>(), py::arg("thresholds") = Thresholds())
      .def(
          "add",
          [](tensorboard::StepScalars& s, const std::vector<Record>& records) {
            tensorboard::StepSummary summary;
            s.add(records, summary);
            py::dict out;
            for (const tensorboard::StepSummary::Value& v : summary.values())
              if (v.kind == tensorboard::StepSummary::Kind::kScalar) out[py::str(v.tag)] = v.scalar;
            return out;
          },
          py::arg("records"), "{tag: value} of one step's records (gradscope.Record), NaN and Inf kept.");
}

}  // namespace gradscope::python
