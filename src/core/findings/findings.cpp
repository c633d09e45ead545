// Every verdict as a Finding. Premises show the report's own numbers with four significant
// digits (shown_number) and how far past its threshold a value is; the evidence keeps every
// digit, so an agent (or a test) can match each number to the report's value.
#include "gradscope/core/findings/kinds.h"
#include "gradscope/core/findings/findings.h"

#include <algorithm>
#include <cmath>

namespace gradscope {
namespace {

constexpr double kNone = FindingMeasure::kNone;

// Below this many steps a statistic over steps is a few samples: at most low confidence;
// below kSteadySteps at most medium (docs/agent-json.md).
constexpr int64_t kFewSteps = 3;
constexpr int64_t kSteadySteps = 10;

Confidence cap_by_steps(Confidence c, int64_t steps) {
  if (steps < kFewSteps) return Confidence::kLow;
  if (steps < kSteadySteps && c == Confidence::kHigh) return Confidence::kMedium;
  return c;
}

// Margins: orders of magnitude past the threshold for ratio measures (1 = 10x), share of the
// range left between threshold and 1 for fractions (1 = every element).
Confidence from_log_margin(double orders) {
  if (!(orders >= 0.3)) return Confidence::kLow;  // less than 2x past (NaN: low)
  return orders >= 1 ? Confidence::kHigh : Confidence::kMedium;
}

Confidence from_fraction_margin(double margin) {
  if (!(margin >= 0.1)) return Confidence::kLow;
  return margin >= 0.5 ? Confidence::kHigh : Confidence::kMedium;
}

double fraction_margin(double value, double threshold) {
  return threshold < 1 ? (value - threshold) / (1 - threshold) : kNone;
}

const char* threshold_name(Flag f) { return flag_info(f).threshold; }

const char* comparison_of(Flag f) { return flag_comparison(flag_info(f).margin); }

bool is_roll_up(const Evidence& e) { return e.measure == "submodules flagged"; }

// " (at the threshold)", " (1.58x the threshold)", or nothing.
std::string margin_text(double value, double threshold) {
  const std::string words = versus_threshold(value, threshold);
  return words.empty() ? words : " (" + words + ")";
}

std::string since_text(int64_t step) {
  return step >= 0 ? ", first at step " + std::to_string(step) : std::string();
}

std::string module_premise(const Evidence& e, const NodeReport& n, const Thresholds& t) {
  const std::string steps = "; " + std::to_string(n.steps) + " steps recorded";
  const std::string detail = e.detail.empty() ? "" : " (" + e.detail + ")";
  if (is_roll_up(e))
    return shown_number(e.value) + " submodules flagged " + flag_name(e.flag) + detail;
  switch (flag_info(e.flag).margin) {
    case FlagMargin::kObserved:
      return shown_number(e.value) + " " + e.measure + ", first in " + site_name(e.site) +
             since_text(e.first_step);
    case FlagMargin::kNothingSeen:
      // The measured count is 0: the rule saw nothing, and says what it looked for.
      return shown_number(e.value) + " " + e.measure + detail + steps;
    case FlagMargin::kChannelShare:
      return shown_number(e.value) + " of " + std::to_string(n.channels) +
             " channels: " + e.measure + " (channel_frac " + shown_number(t.channel_frac) +
             ", dead_frac " + shown_number(e.threshold) + ")" + detail + steps;
    default:
      return e.measure + " = " + shown_number(e.value) + " " + comparison_of(e.flag) + " " +
             threshold_name(e.flag) + " " + shown_number(e.threshold) + margin_text(e.value, e.threshold) +
             since_text(e.first_step) + detail + steps;
  }
}

std::vector<FindingMeasure> module_evidence(const Evidence& e, const NodeReport& n,
                                            const Thresholds& t) {
  std::vector<FindingMeasure> out;
  const FlagMargin margin = flag_info(e.flag).margin;
  const bool compared = !is_roll_up(e) && flag_comparison(margin)[0] != '\0';
  const bool channels = margin == FlagMargin::kChannelShare;
  if (channels) {
    // The rule compares the count with channel_frac x channels; dead_frac judged each channel.
    out.push_back({e.measure, e.value, t.channel_frac * static_cast<double>(n.channels), ">"});
    out.push_back({"channels", static_cast<double>(n.channels), kNone, ""});
    out.push_back({"dead_frac", e.threshold, kNone, ""});
  } else {
    out.push_back({e.measure, e.value, compared ? e.threshold : kNone,
                   compared ? comparison_of(e.flag) : ""});
  }
  out.push_back({"steps", static_cast<double>(n.steps), kNone, ""});
  if (margin == FlagMargin::kObserved)
    out.push_back({"nonfinite_steps", static_cast<double>(n.nonfinite_steps), kNone, ""});
  return out;
}

struct FlowTexts {
  const char* implies;
  const char* action;
};

FlowTexts flow_texts(FlowHealth h) {
  switch (h) {
    case FlowHealth::kCritical:
      return {
          "Gradients exploded in most steps: the run is diverging and its later steps are "
          "wasted.",
          "Stop training; clip the gradient norm and lower the learning rate, then fix the "
          "nodes with module findings."};
    case FlowHealth::kProblemsDetected:
      return {
          "In a large share of steps (or in some step, exploding) a node's gradient was too "
          "small or too large to train it.",
          "Fix the nodes with module findings first; review depth, initialisation and the "
          "learning-rate schedule."};
    case FlowHealth::kMinorIssues:
      return {"A few steps had a vanishing gradient somewhere; training may still be fine.",
              "Keep watching the nodes named in the evidence; act on their module findings if "
              "they persist."};
    case FlowHealth::kHealthy:
      break;
  }
  return {"", ""};
}

double flow_ratio_threshold(FlowHealth h, const Thresholds& t) {
  switch (h) {
    case FlowHealth::kCritical:
      return t.flow_critical_ratio;
    case FlowHealth::kProblemsDetected:
      return t.flow_problems_ratio;
    default:
      return t.flow_minor_ratio;
  }
}

}  // namespace

Confidence module_confidence(const Evidence& e, const NodeReport& n, const Thresholds& t) {
  Confidence c = Confidence::kHigh;  // NAN, INF, FROZEN, NO_DATA, roll-ups: observed facts
  if (!is_roll_up(e)) {
    switch (flag_info(e.flag).margin) {
      case FlagMargin::kOrdersBelow:
        c = e.value <= 0 ? Confidence::kHigh : from_log_margin(std::log10(e.threshold / e.value));
        break;
      case FlagMargin::kOrdersAbove:
        c = from_log_margin(std::log10(e.value / e.threshold));
        break;
      case FlagMargin::kFraction:
        c = from_fraction_margin(fraction_margin(e.value, e.threshold));
        break;
      case FlagMargin::kChannelShare:
        c = n.channels > 0 ? from_fraction_margin(fraction_margin(
                                 e.value / static_cast<double>(n.channels), t.channel_frac))
                           : Confidence::kLow;
        break;
      case FlagMargin::kObserved:
      case FlagMargin::kNothingSeen:
        break;  // observed facts
    }
  }
  return cap_by_steps(c, n.steps);
}

std::vector<Finding> module_findings(const Report& report) {
  std::vector<Finding> out;
  for (const NodeReport* n : report.flagged_worst_first()) {
    for (const Evidence& e : n->evidence) {
      const NonFiniteOrigin& origin = report.nonfinite_origin;
      const FlagGuidance& g = origin.found() ? nonfinite_guidance(e.flag, origin.phase) : flag_guidance(e.flag);
      Finding f;
      f.kind = FindingKind::kModule;
      f.type = flag_name(e.flag);
      f.node = n->node;
      f.since_step = e.first_step;
      f.premise = module_premise(e, *n, report.thresholds);
      // After a blow-up, saturation, stagnation and NaN are its effects, not the cause.
      if (report.series.follows_divergence(e.first_step))
        f.premise += "; began after the loss diverged at step " + std::to_string(report.series.divergence_step) +
                     ": an effect of the divergence";
      f.implies = g.implies;
      f.action = g.action;
      f.expected_effect = g.expected_effect;
      f.confidence = module_confidence(e, *n, report.thresholds);
      f.evidence = module_evidence(e, *n, report.thresholds);
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::optional<Finding> flow_finding(const FlowSummary& flow, const Thresholds& t) {
  if (flow.health == FlowHealth::kHealthy) return std::nullopt;
  Finding f;
  f.kind = FindingKind::kFlow;
  f.type = kGradientFlow;
  const double ratio_threshold = flow_ratio_threshold(flow.health, t);
  int64_t vanishing = 0, exploding = 0;
  for (const NodeFlow& n : flow.nodes) {
    for (int64_t s : {n.first_vanishing, n.first_exploding})
      if (s >= 0 && (f.since_step < 0 || s < f.since_step)) f.since_step = s;
    vanishing += n.vanishing_frames;
    exploding += n.exploding_frames;
  }
  f.premise = std::string("gradient flow ") + flow_health_name(flow.health) + ": " +
              std::to_string(flow.issue_frames) + " of " + std::to_string(flow.frames) +
              " frames (issue ratio " + shown_number(flow.issue_ratio) +
              ") had a node with gradient L2 < grad_lo " + shown_number(t.grad_lo) +
              " or > grad_hi " + shown_number(t.grad_hi) + " or non-finite; " +
              std::to_string(vanishing) + " vanishing and " + std::to_string(exploding) +
              " exploding node-frames" + since_text(f.since_step);
  const FlowTexts texts = flow_texts(flow.health);
  f.implies = texts.implies;
  f.action = texts.action;
  f.expected_effect =
      "The share of frames with issues falls below flow_minor_ratio and the "
      "gradient-flow health reads healthy.";
  f.evidence = {{"issue_ratio", flow.issue_ratio, ratio_threshold, ">"},
                {"issue_frames", static_cast<double>(flow.issue_frames), kNone, ""},
                {"frames", static_cast<double>(flow.frames), kNone, ""},
                {"vanishing node-frames", static_cast<double>(vanishing), kNone, ""},
                {"exploding node-frames", static_cast<double>(exploding), kNone, ""}};
  for (const NodeFlow& n : flow.nodes) {
    if (n.vanishing_frames)
      f.evidence.push_back(
          {"vanishing frames: " + n.node, static_cast<double>(n.vanishing_frames), kNone, ""});
    if (n.exploding_frames)
      f.evidence.push_back(
          {"exploding frames: " + n.node, static_cast<double>(n.exploding_frames), kNone, ""});
  }
  // The level's own ratio sets the confidence: above the critical ratio is high, above the
  // problems ratio medium, below both low (MinorIssues, or ProblemsDetected by one explosion).
  Confidence c = Confidence::kLow;
  if (flow.issue_ratio > t.flow_critical_ratio)
    c = Confidence::kHigh;
  else if (flow.issue_ratio > t.flow_problems_ratio)
    c = Confidence::kMedium;
  f.confidence = cap_by_steps(c, flow.frames);
  return f;
}

std::vector<Finding> embedding_findings(const EmbeddingReport& table) {
  std::vector<Finding> out;
  for (const EmbeddingDiagnostic& d : table.diagnostics) {
    Finding f;
    f.kind = FindingKind::kEmbedding;
    f.type = d.type;
    f.node = table.layer;
    f.premise = d.premise;
    f.implies = d.implies;
    f.action = d.advice.empty() ? d.action : d.advice;  // older files have only the code
    f.action_code = d.action;
    f.expected_effect = d.expected_effect;
    // The embedding rules score 0..1 from their own statistics (embedding.md).
    f.confidence = d.confidence >= 0.8   ? Confidence::kHigh
                   : d.confidence >= 0.5 ? Confidence::kMedium
                                         : Confidence::kLow;
    for (const auto& [name, value] : d.evidence) f.evidence.push_back({name, value, kNone, ""});
    f.evidence.push_back({"confidence_score", d.confidence, kNone, ""});
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> tree_findings(const TreeDynamicsReport& r) {
  std::vector<Finding> out;
  for (const TreeFinding& t : r.findings) {
    Finding f;
    f.kind = FindingKind::kTrees;
    f.type = tree_flag_name(t.flag);
    const TreeFlagInfo& info = tree_flag_info(t.flag);
    f.node = info.names_feature && t.feature >= 0
                 ? "features/" + r.feature_name(t.feature)
                 : std::string("trees");
    f.since_step = t.first_round;
    const char* cmp = info.comparison;
    f.premise = t.measure + " = " + shown_number(t.value) + " " + cmp + " " +
                shown_number(t.threshold) + margin_text(t.value, t.threshold) + ", from round " + std::to_string(t.first_round) +
                " of " + std::to_string(r.rounds) + ": " + t.detail;
    f.implies = info.implies;
    f.action = t.advice;  // the tree rules name the round or feature in it
    f.expected_effect = info.expected_effect;
    // Relative margin past the threshold: 1 (twice, or all the way to 0) is high.
    const double margin =
        t.threshold != 0 ? std::fabs(t.value - t.threshold) / std::fabs(t.threshold) : kNone;
    f.confidence = !(margin >= 0.25) ? Confidence::kLow
                   : margin >= 1     ? Confidence::kHigh
                                     : Confidence::kMedium;
    f.evidence = {{t.measure, t.value, t.threshold, cmp},
                  {"rounds", static_cast<double>(r.rounds), kNone, ""}};
    // A rule that computes the probability its finding is real (OVERFITTING's permutation
    // test) is ranked by that, not by the margin: a 3.9x rise on 5 rows is not sure.
    if (std::isfinite(t.confidence)) {
      f.confidence = t.confidence >= 0.99             ? Confidence::kHigh
                     : t.confidence >= kTreeConfident ? Confidence::kMedium
                                                      : Confidence::kLow;
      f.premise += "; confidence " + shown_number(t.confidence) +
                   (t.tentative() ? " (tentative: not counted against the run)" : "");
      f.evidence.push_back({"confidence_score", t.confidence, kNone, ""});
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace gradscope
