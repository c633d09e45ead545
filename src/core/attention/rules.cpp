#include "gradscope/core/attention/rules.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>

#include "gradscope/core/vocabulary/numbers.h"

namespace gradscope {

namespace {

/// How one sample reads against a rule: past it, within it, or silent (the sample cannot say:
/// the run neither grows nor breaks).
enum class Reading : uint8_t { kPast, kWithin, kSilent };

/// One per-head rule: a flag raised when `read` is kPast at attention_persist_steps sampled
/// steps in a row.
struct HeadRule {
  Flag flag;
  Reading (*read)(const HeadTrack& head, const HeadStats& s, const Thresholds& t);
  double (*value)(const HeadStats& s);  ///< the evidence's value at a sample (NaN: none)
  bool larger_is_worse;                 ///< which sample is the head's worst
  double Thresholds::*threshold;        ///< the evidence's threshold
  std::string (*measure)(const HeadTrack& head, const HeadRun& run, int index);  ///< what `value` is
};

const HeadRule kHeadRules[] = {
    {Flag::kAttentionLogitGrowth,
     [](const HeadTrack& h, const HeadStats& s, const Thresholds& t) {
       return h.first_max_logit <= t.attention_logit_hi && s.max_logit > t.attention_logit_hi ? Reading::kPast
                                                                                               : Reading::kWithin;
     },
     [](const HeadStats& s) { return s.max_logit; }, true, &Thresholds::attention_logit_hi,
     [](const HeadTrack& h, const HeadRun& run, int index) {
       return "largest pre-softmax logit of head " + std::to_string(index) + " (step " +
              std::to_string(run.worst_step) + "; " + shown_number(h.first_max_logit) + " at its first sample)";
     }},
    {Flag::kAttentionEntropyCollapse,
     [](const HeadTrack& h, const HeadStats& s, const Thresholds& t) {
       const double fraction = s.mean_entropy_fraction();
       if (!std::isfinite(fraction)) return Reading::kSilent;  // no query sees two keys
       return fraction < t.attention_entropy_floor && fraction < t.attention_entropy_drop * h.early_fraction
                  ? Reading::kPast
                  : Reading::kWithin;
     },
     [](const HeadStats& s) { return s.mean_entropy_fraction(); }, false, &Thresholds::attention_entropy_floor,
     [](const HeadTrack& h, const HeadRun& run, int index) {
       return "lowest mean attention entropy / log(keys seen) of head " + std::to_string(index) + " (step " +
              std::to_string(run.worst_step) + "; " + shown_number(h.early_fraction) + " early; " +
              shown_number(100 * run.at_worst.top_fraction()) +
              "% of queries with one key above 0.99 of the weight)";
     }},
};
constexpr std::size_t kHeadRuleCount = std::size(kHeadRules);

std::string head_list(const std::vector<int>& heads, std::size_t of) {
  std::string s = heads.size() == 1 ? "head " : "heads ";
  for (std::size_t i = 0; i < heads.size(); ++i) s += (i ? ", " : "") + std::to_string(heads[i]);
  return s + " of " + std::to_string(of);
}

}  // namespace

void HeadTrack::add(int64_t step, const HeadStats& s, const Thresholds& t) {
  if (s.queries == 0) return;  // nothing finite to judge
  const double fraction = s.mean_entropy_fraction();
  if (samples == 0) first_max_logit = s.max_logit;
  if (samples < kEarlySamples && std::isfinite(fraction)) early_fraction = std::max(early_fraction, fraction);
  ++samples;
  runs.resize(kHeadRuleCount);
  for (std::size_t i = 0; i < kHeadRuleCount; ++i) {
    const HeadRule& rule = kHeadRules[i];
    HeadRun& run = runs[i];
    const double v = rule.value(s);
    if (!std::isnan(v) && (run.worst_step < 0 || (rule.larger_is_worse ? v > run.worst : v < run.worst))) {
      run.worst = v;
      run.worst_step = step;
      run.at_worst = s;
    }
    switch (rule.read(*this, s, t)) {
      case Reading::kPast:
        if (run.length++ == 0) run.start = step;
        if (run.since < 0 && run.length >= t.attention_persist_steps) run.since = run.start;
        break;
      case Reading::kWithin: run.length = 0; break;
      case Reading::kSilent: break;
    }
  }
}

const HeadRun* HeadTrack::run(Flag flag) const {
  for (std::size_t i = 0; i < kHeadRuleCount && i < runs.size(); ++i)
    if (kHeadRules[i].flag == flag) return &runs[i];
  return nullptr;
}

bool raised_per_head(Flag flag) {
  for (const HeadRule& rule : kHeadRules)
    if (rule.flag == flag) return true;
  return false;
}

int64_t HeadTrack::since(Flag flag) const {
  const HeadRun* r = run(flag);
  return r ? r->since : -1;
}

std::vector<Evidence> judge_attention(const std::vector<HeadTrack>& heads, const Thresholds& t) {
  std::vector<Evidence> out;
  for (std::size_t i = 0; i < kHeadRuleCount; ++i) {
    const HeadRule& rule = kHeadRules[i];
    std::vector<int> flagged;
    int worst = -1;
    int64_t since = -1;
    for (std::size_t h = 0; h < heads.size(); ++h) {
      if (heads[h].runs.size() <= i || heads[h].runs[i].since < 0) continue;
      const HeadRun& run = heads[h].runs[i];
      flagged.push_back(static_cast<int>(h));
      const double w = worst < 0 ? 0 : heads[static_cast<std::size_t>(worst)].runs[i].worst;
      if (worst < 0 || (rule.larger_is_worse ? run.worst > w : run.worst < w)) worst = static_cast<int>(h);
      if (since < 0 || run.since < since) since = run.since;
    }
    if (worst < 0) continue;
    const HeadTrack& w = heads[static_cast<std::size_t>(worst)];
    out.push_back({rule.flag, Site::kAttentionLogits, since, w.runs[i].worst, t.*rule.threshold,
                   rule.measure(w, w.runs[i], worst), head_list(flagged, heads.size())});
  }
  return out;
}

}  // namespace gradscope
