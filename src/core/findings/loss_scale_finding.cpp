// loss_scale_finding: a loss scaler's skipped steps as a finding (LOSS_SCALE_OVERFLOW).
#include "gradscope/core/findings/kinds.h"
#include "gradscope/core/findings/findings.h"

#include <string>
#include <vector>

namespace gradscope {
namespace {

// "0-8, 2000, 4000": runs of consecutive steps as ranges, at most 12, then how many more.
std::string step_ranges(const LossScaleReport& ls) {
  const std::vector<int64_t>& steps = ls.skipped_steps;
  std::string out;
  std::size_t ranges = 0, i = 0;
  for (; i < steps.size() && ranges < 12; ++ranges) {
    std::size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1) ++j;
    out += (out.empty() ? "" : ", ") + std::to_string(steps[i]) + (j > i ? "-" + std::to_string(steps[j]) : "");
    i = j + 1;
  }
  const int64_t more = ls.skipped - static_cast<int64_t>(i);
  if (more > 0) out += (out.empty() ? "" : ", ") + std::string("and ") + std::to_string(more) + " more";
  return out;
}

}  // namespace

std::optional<Finding> loss_scale_finding(const LossScaleReport& ls) {
  if (!ls.found()) return std::nullopt;
  const bool warning = ls.verdict == LossScaleReport::Verdict::kWarning;
  Finding f;
  f.kind = FindingKind::kLossScale;
  f.type = kLossScaleOverflow;
  f.since_step = ls.first_skipped;
  auto steps_text = [](int64_t n) { return std::to_string(n) + (n == 1 ? " step" : " steps"); };
  f.premise = std::string(warning ? "warning" : "informational") + ": " + steps_text(ls.skipped) + " of " +
              std::to_string(ls.steps) + " skipped on overflow (steps " + step_ranges(ls) + "); loss scale " + shown_number(ls.first_scale) +
              " at the first step, " + shown_number(ls.last_scale) + " at the last, lowest " +
              shown_number(ls.min_scale) + "; " +
              (ls.first_fit < 0 ? std::string("no step fit the scale")
                                : "first fit at step " + std::to_string(ls.first_fit) + ", then " +
                                      std::to_string(ls.skipped_after_fit) + " of " +
                                      std::to_string(ls.steps_after_fit) + " skipped") +
              (ls.trailing_skipped > 0 ? "; the last " + steps_text(ls.trailing_skipped) + " skipped" : "");
  const FlagGuidance& g = loss_scale_guidance(warning);
  f.implies = g.implies;
  f.action = g.action;
  f.expected_effect = g.expected_effect;
  // Counted, not estimated: which steps the scaler skipped is known exactly.
  f.confidence = Confidence::kHigh;
  f.evidence = {{"skipped_steps", static_cast<double>(ls.skipped), FindingMeasure::kNone, ""},
                {"steps", static_cast<double>(ls.steps), FindingMeasure::kNone, ""},
                {"skipped_after_fit", static_cast<double>(ls.skipped_after_fit), FindingMeasure::kNone, ""},
                {"steps_after_fit", static_cast<double>(ls.steps_after_fit), FindingMeasure::kNone, ""},
                {"trailing_skipped", static_cast<double>(ls.trailing_skipped), FindingMeasure::kNone, ""},
                {"first_scale", ls.first_scale, FindingMeasure::kNone, ""},
                {"last_scale", ls.last_scale, FindingMeasure::kNone, ""},
                {"min_scale", ls.min_scale, FindingMeasure::kNone, ""}};
  return f;
}

}  // namespace gradscope
