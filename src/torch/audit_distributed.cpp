// Audit across processes: which nodes every rank must agree on, and the merge at each step's
// end, where the step's records are complete (docs/distributed.md).
#include <c10/core/ScalarType.h>

#include "audit_state.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {

void Audit::State::init_ranks() {
  if (!options.process_group) return;
  // A node's parameters' dtypes and shapes: ranks that differ there would merge statistics of
  // different things, so they must agree before anything is merged.
  std::vector<std::string> ids, descriptions;
  for (const Entry& e : entries) {
    std::string d = e.module ? "" : "free node";
    for (std::size_t pi : e.params) {
      const at::Tensor& t = params[pi].tensor;
      d += (d.empty() ? "" : ", ") + std::string(c10::toString(t.scalar_type())) + shape_of(t);
    }
    ids.push_back(e.id);
    descriptions.push_back(d.empty() ? "no parameters" : d);
  }
  ranks = std::make_unique<RankMerge>(options.process_group, "audit", std::move(ids), std::move(descriptions));
}

void Audit::State::merge_ranks(int64_t at_step) {
  if (!ranks) return;
  current.step = at_step;
  ranks->merge(current);
}

}  // namespace gradscope::torch
