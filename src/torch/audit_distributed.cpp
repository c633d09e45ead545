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
    if (d.empty()) d = "no parameters";
    // What sizes the views part of each step's buffer: ranks whose buffers differ in size
    // cannot meet in the allgather (Gloo aborts the receiving rank), so the options that decide
    // it must agree now, with an error naming them.
    if (e.channel_view) d += ", channel view dim " + std::to_string(e.channel_view->dim) + " every " + std::to_string(e.channel_view->every);
    if (options.histogram_every > 0) d += ", histograms every " + std::to_string(options.histogram_every);
    // And at which steps the effective ranks and CKA are merged (audit_spectra.cpp).
    if (e.leakage) d += ", leakage every " + std::to_string(options.leakage_every);
    if (e.channel_view || options.histogram_every > 0) d += " of every " + std::to_string(options.sample_every) + " steps";
    ids.push_back(e.id);
    descriptions.push_back(d);
  }
  ranks = std::make_unique<RankMerge>(options.process_group, "audit", std::move(ids), std::move(descriptions));
  spectra = std::make_unique<internal::SpectraMerge>(options.process_group, "audit", options.merge_spectra_max_bytes);
}

void Audit::State::merge_ranks(int64_t at_step) {
  if (!ranks) return;
  current.step = at_step;
  ranks->merge(current);
}

}  // namespace gradscope::torch
