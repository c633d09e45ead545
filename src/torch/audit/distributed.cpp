// Audit across processes: which nodes every rank must agree on, and the merge at each step's
// end, where the step's records are complete, waited for at the next audited step with
// merge_async (docs/distributed.md).
#include <c10/core/ScalarType.h>

#include "audit/state.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {

void Audit::State::init_ranks() {
  if (!options.process_group) return;
  // A node's parameters' dtypes and shapes: ranks that differ there would merge statistics of
  // different things, so they must agree before anything is merged.
  // A shard is described by its whole parameter's shape (ranks hold shards of other sizes), and
  // marked: every rank must merge the node's parameter sites the same way.
  std::vector<std::string> ids, descriptions;
  std::vector<char> sharded;
  for (const Entry& e : entries) {
    std::string d = e.module ? "" : "free node";
    for (std::size_t pi : e.params) {
      const Param& p = params[pi];
      d += (d.empty() ? "" : ", ") + std::string(c10::toString(p.tensor.scalar_type())) +
           (p.shard ? shape_of(p.whole_shape) + " sharded" : shape_of(p.tensor));
    }
    if (d.empty()) d = "no parameters";
    // What sizes the views part of each step's buffer: ranks whose buffers differ in size
    // cannot meet in the allgather (Gloo aborts the receiving rank), so the options that decide
    // it must agree now, with an error naming them.
    if (e.channel_view) d += ", channel view dim " + std::to_string(e.channel_view->dim) + " every " + std::to_string(e.channel_view->every);
    if (options.histogram_every > 0) d += ", histograms every " + std::to_string(options.histogram_every);
    // And at which steps the effective ranks and CKA are merged (spectra.cpp).
    if (e.leakage) d += ", leakage every " + std::to_string(options.leakage_every);
    if (e.channel_view || options.histogram_every > 0) d += " of every " + std::to_string(options.sample_every) + " steps";
    // Ranks that share the batch merge every sample-side record otherwise: all must say so.
    if (options.ranks_share_batch) {
      if (e.channel_view || e.leakage)
        throw Error("audit: node '" + e.id + "': channel views and leakage pairs are not merged across ranks that "
                    "share the batch (ranks_share_batch, tensor parallelism): each rank's channels are a slice");
      d += ", ranks share the batch";
    }
    ids.push_back(e.id);
    descriptions.push_back(d);
    sharded.push_back(e.sharded);
  }
  ranks = std::make_unique<RankMerge>(options.process_group, "audit", std::move(ids), std::move(descriptions),
                                      std::move(sharded), options.ranks_share_batch);
  if (options.ranks_average_gradients && !options.ranks_share_batch) output_grad_factor = static_cast<double>(ranks->job().world_size);
  spectra = std::make_unique<internal::SpectraMerge>(options.process_group, "audit", options.merge_spectra_max_bytes);
}

bool Audit::State::views_step() const {
  if (histogram_step() || attention_step()) return true;
  // A superset of the steps a tap records a channel view at (tap.cpp): it also counts
  // submodules' views at steps their own sample_every skips, which then send nothing.
  for (const Entry& e : entries)
    if (e.channel_view && audit_index() % e.channel_view->every == 0) return true;
  return false;
}

// Collective order: every merge starts inside step(), at the same point of every rank's loop;
// the waits (here, report(), the destructor) start none, so a rank that waits early (say rank
// 0 printing report()) cannot reorder its collectives against the others' gradient all-reduces.
void Audit::State::merge_step(int64_t at_step, const StepRecords*& ended) {
  current.step = at_step;
  if (ranks->pending()) {  // merge_async: the previous audited step's, left in flight
    StepRecords merged = ranks->finish();
    ended = &end_step(merged);
  }
  StepRecords mine;
  std::swap(mine, current);
  ranks->start(std::move(mine), views_step());
  if (options.merge_async) return;
  StepRecords merged = ranks->finish();
  ended = &end_step(merged);
}

void Audit::State::settle() {
  if (!ranks) return;  // one process: nothing is ever in flight
  std::unique_lock<std::mutex> lock(mutex);
  if (!ranks->pending() || handing_over) return;
  StepRecords merged = ranks->finish();
  const StepRecords& ended = end_step(merged);
  lock.unlock();  // the callbacks may call back into the audit
  hand_over(ended);
}

void Audit::State::hand_over(const StepRecords& ended) {
  // The run first: a callback that throws (a KeyboardInterrupt from Python) must not cost the
  // saved run the step, which the audit's own records already hold.
  if (options.sink && writes_run()) options.sink->add_step(ended);
  if (options.on_step) options.on_step(ended.records);
}

}  // namespace gradscope::torch
