// Audit across processes: the job's effective ranks and CKA (distributed/spectra.h). A tap
// hands its channel view's activation over while it records the rank's own values; the step's
// end, where the leakage pairs are measured, replaces them by the job's.
#include <algorithm>

#include "audit/state.h"

namespace gradscope::torch {

void Audit::State::spectra_channel_view(const std::string& id, const ChannelView& view, const at::Tensor& x,
                                        std::size_t first_similarity) {
  spectra->add_rank(id, x, view.dim);
  // The group pairs in record_channel_view's order: records first_similarity, + 1, ...
  std::size_t record = first_similarity;
  const auto slice = [&](const std::pair<int64_t, int64_t>& g) {
    return x.detach().narrow(view.dim, g.first, g.second - g.first).movedim(view.dim, 1);
  };
  for (std::size_t i = 0; i < view.groups.size(); ++i)
    for (std::size_t j = i + 1; j < view.groups.size(); ++j)
      spectra->add_similarity({record++}, slice(view.groups[i]), slice(view.groups[j]));
}

void Audit::State::merge_spectra(int64_t at_step) {
  if (!spectra) return;
  // Whether any rank can have measured one this step, from options every rank shares (the
  // node check compares them): then every rank takes part in the collective, measured or not.
  const bool leakage = !options.leakage_pairs.empty() && audit_index() % options.leakage_every == 0;
  bool views = false;
  for (const Entry& e : entries)
    views = views || (e.channel_view && entry_audited(e) && audit_index() % e.channel_view->every == 0);
  if (!leakage && !views) return;
  auto& sims = current.similarities;
  for (const auto& [a, b] : options.leakage_pairs) {
    const auto x = leakage_inputs.find(by_id.at(a));
    const auto y = leakage_inputs.find(by_id.at(b));
    if (x == leakage_inputs.end() || y == leakage_inputs.end()) continue;
    std::vector<std::size_t> records;  // (a, b) and (b, a), as step() recorded them
    for (std::size_t r = sims.size(); r-- > 0 && records.size() < 2;)
      if (sims[r].step == at_step && ((sims[r].node == a && sims[r].other == b) || (sims[r].node == b && sims[r].other == a)))
        records.push_back(r);
    std::sort(records.begin(), records.end());  // (a, b) first: it names the pair
    if (!records.empty()) spectra->add_similarity(std::move(records), x->second, y->second);
  }
  current.step = at_step;
  spectra->merge(current, warnings);
}

}  // namespace gradscope::torch
