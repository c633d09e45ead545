// gradscope._engine.StepScalars: the per-step scalars gradscope's TensorBoard events hold
// (tensorboard/step_scalars.h), for loggers written in Python (gradscope.integrations.wandb), so
// a W&B chart and a TensorBoard card of the same measure are one computation, flags included.
//
//   s = gradscope._engine.StepScalars(gradscope.Thresholds())
//   s.add(records)   # {"grad_l2/fc1": 0.53, "flag/EXPLODING/fc1": 0.0, ...} for one step
#pragma once

#include <pybind11/pybind11.h>

namespace gradscope::python {

/// Adds StepScalars (one per series of steps: STAGNANT's per-step flag needs the run before).
void bind_step_scalars(pybind11::module_& m);

}  // namespace gradscope::python
