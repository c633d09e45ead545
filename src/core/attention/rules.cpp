#include "gradscope/core/attention/rules.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "gradscope/core/vocabulary/numbers.h"

namespace gradscope {

void HeadTrack::add(int64_t step, const HeadStats& s, const Thresholds& t) {
  if (s.queries == 0) return;  // nothing finite to judge
  const double fraction = s.mean_entropy_fraction();
  if (samples == 0) first_max_logit = s.max_logit;
  if (samples < kEarlySamples && std::isfinite(fraction)) early_fraction = std::max(early_fraction, fraction);
  ++samples;

  if (s.max_logit > peak_logit) peak_logit = s.max_logit, peak_step = step;
  const bool grown = first_max_logit <= t.attention_logit_hi && s.max_logit > t.attention_logit_hi;
  if (grown) {
    if (logit_run++ == 0) logit_run_start = step;
    if (first_growth < 0 && logit_run >= t.attention_persist_steps) first_growth = logit_run_start;
  } else {
    logit_run = 0;
  }

  if (!std::isfinite(fraction)) return;  // no query sees two keys: no entropy to compare
  if (fraction < lowest_fraction) {
    lowest_fraction = fraction;
    top_fraction_at_lowest = s.top_fraction();
    lowest_step = step;
  }
  const bool collapsed = fraction < t.attention_entropy_floor && fraction < t.attention_entropy_drop * early_fraction;
  if (collapsed) {
    if (collapse_run++ == 0) collapse_run_start = step;
    if (first_collapse < 0 && collapse_run >= t.attention_persist_steps) first_collapse = collapse_run_start;
  } else {
    collapse_run = 0;
  }
}

namespace {

std::string head_list(const std::vector<int>& heads, std::size_t of) {
  std::string s = heads.size() == 1 ? "head " : "heads ";
  for (std::size_t i = 0; i < heads.size(); ++i) s += (i ? ", " : "") + std::to_string(heads[i]);
  return s + " of " + std::to_string(of);
}

}  // namespace

std::vector<Evidence> judge_attention(const std::vector<HeadTrack>& heads, const Thresholds& t) {
  std::vector<Evidence> out;
  std::vector<int> grown, collapsed;
  int worst_grown = -1, worst_collapsed = -1;
  int64_t first_grown = -1, first_collapsed = -1;
  for (std::size_t i = 0; i < heads.size(); ++i) {
    const HeadTrack& h = heads[i];
    const int head = static_cast<int>(i);
    if (h.first_growth >= 0) {
      grown.push_back(head);
      if (worst_grown < 0 || h.peak_logit > heads[static_cast<std::size_t>(worst_grown)].peak_logit) worst_grown = head;
      if (first_grown < 0 || h.first_growth < first_grown) first_grown = h.first_growth;
    }
    if (h.first_collapse >= 0) {
      collapsed.push_back(head);
      if (worst_collapsed < 0 || h.lowest_fraction < heads[static_cast<std::size_t>(worst_collapsed)].lowest_fraction)
        worst_collapsed = head;
      if (first_collapsed < 0 || h.first_collapse < first_collapsed) first_collapsed = h.first_collapse;
    }
  }
  if (worst_grown >= 0) {
    const HeadTrack& w = heads[static_cast<std::size_t>(worst_grown)];
    out.push_back({Flag::kAttentionLogitGrowth, Site::kAttentionLogits, first_grown, w.peak_logit,
                   t.attention_logit_hi,
                   "largest pre-softmax logit of head " + std::to_string(worst_grown) + " (step " +
                       std::to_string(w.peak_step) + "; " + shown_number(w.first_max_logit) + " at its first sample)",
                   head_list(grown, heads.size())});
  }
  if (worst_collapsed >= 0) {
    const HeadTrack& w = heads[static_cast<std::size_t>(worst_collapsed)];
    out.push_back({Flag::kAttentionEntropyCollapse, Site::kAttentionLogits, first_collapsed, w.lowest_fraction,
                   t.attention_entropy_floor,
                   "lowest mean attention entropy / log(keys seen) of head " + std::to_string(worst_collapsed) +
                       " (step " + std::to_string(w.lowest_step) + "; " + shown_number(w.early_fraction) +
                       " early; " + shown_number(100 * w.top_fraction_at_lowest) +
                       "% of queries with one key above 0.99 of the weight)",
                   head_list(collapsed, heads.size())});
  }
  return out;
}

}  // namespace gradscope
