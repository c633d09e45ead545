#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "gradscope/core/findings/findings.h"
#include "html/internal/loss.h"
#include "html/internal/spec.h"
#include "html/internal/theme.h"

namespace gradscope::internal {
namespace {

using nlohmann::json;

const json kStepX = {{"field", "step"}, {"type", "quantitative"}};

// Lines of `values` (rows {step, value, series}) with a legend, and the marks layered on them.
json lines_with_marks(json spec, json values, const json& y, json marks) {
  json line = {{"data", {{"values", std::move(values)}}},
               {"mark", {{"type", "line"}, {"strokeWidth", 1.5}}},
               {"encoding", {{"x", kStepX}, {"y", y}, {"color", {{"field", "series"}, {"type", "nominal"}, {"title", nullptr}}},
                             {"tooltip", json::array({{{"field", "series"}}, {{"field", "step"}}, {{"field", "value"}, {"format", ".4g"}}})}}}};
  json layers = json::array({line});
  for (json& m : marks) layers.push_back(std::move(m));
  spec["layer"] = std::move(layers);
  return spec;
}

// Appends the points of one run's loss and gradient norms; `run` prefixes the series' labels
// when two runs share the chart. Returns whether every loss was > 0 (a log axis fits).
bool add_points(const std::vector<StepScalar>& values, const std::string& run, json& loss, json& norms) {
  const std::string prefix = run.empty() ? "" : run + ": ";
  bool positive = true;
  for (const StepScalar& x : values) {
    if (!std::isfinite(x.value)) continue;  // a NaN loss is the divergence's mark, not a point
    if (x.name == kLossSeries) {
      // A loss past float32's range is LOSS_OUT_OF_RANGE (the headline says so), not a point: on
      // the axis it would flatten every other loss to a line.
      if (std::fabs(x.value) > std::numeric_limits<float>::max()) continue;
      loss.push_back({{"step", x.step}, {"value", x.value}, {"series", run.empty() ? "loss" : run}});
      positive = positive && x.value > 0;
    } else if ((x.name == kGradNormSeries || x.name == kClippedGradNormSeries) && x.value > 0) {
      norms.push_back({{"step", x.step}, {"value", x.value},
                       {"series", prefix + (x.name == kGradNormSeries ? "before clipping" : "after clipping")}});
    }
  }
  return positive;
}

}  // namespace

std::vector<Chart> loss_charts(const std::vector<StepScalar>& values, const Report& report, const BesideRun* beside,
                               const std::string& name) {
  const SeriesReport& s = report.series;
  json loss = json::array(), norms = json::array();
  // Two runs: each line says whose it is (the second named apart when both have one name).
  const std::string mine = beside ? (name.empty() ? "this run" : name) : "";
  const std::string theirs = !beside ? "" : beside->name == mine ? beside->name + " (beside)" : beside->name;
  bool positive = add_points(values, mine, loss, norms);
  if (beside && beside->scalars) positive = add_points(*beside->scalars, theirs, loss, norms) && positive;
  std::vector<Chart> out;
  if (!loss.empty()) {
    json subtitle = json::array({"the loss handed to the audit at each step" + std::string(positive ? " (log)" : "")});
    const std::string headline = series_headline(s);
    if (!headline.empty()) subtitle.push_back(headline);
    if (beside) subtitle.push_back("beside it, " + theirs + ": " + beside->verdict);
    json marks = json::array();
    json spikes = json::array();
    for (const SeriesSpike& p : s.spikes)
      spikes.push_back({{"step", p.step}, {"value", p.value}, {"z", chart_number(p.z)},
                        {"batch", std::isnan(p.batch) ? json(nullptr) : json(p.batch)}});
    if (!spikes.empty())
      marks.push_back({{"data", {{"values", spikes}}},
                       {"mark", {{"type", "point"}, {"filled", true}, {"size", 70}, {"color", theme::kFailing}}},
                       {"encoding", {{"x", kStepX}, {"y", {{"field", "value"}, {"type", "quantitative"}}},
                                     {"tooltip", json::array({{{"field", "step"}}, {{"field", "value"}, {"format", ".4g"}},
                                                              {{"field", "z"}, {"format", ".1f"}}, {{"field", "batch"}}})}}}});
    if (s.diverged()) {
      const std::string label = "DIVERGENCE from step " + std::to_string(s.divergence_step);
      marks.push_back(
          {{"data", {{"values", json::array({{{"step", s.divergence_step}, {"label", label}}})}}},
           {"encoding", {{"x", kStepX}}},
           {"layer", json::array({{{"mark", {{"type", "rule"}, {"color", theme::kNaNCell}, {"strokeWidth", 2}}}},
                                  {{"mark", {{"type", "text"}, {"align", "left"}, {"dx", 4}, {"dy", -4}, {"baseline", "top"},
                                             {"color", theme::kNaNCell}}},
                                   {"encoding", {{"text", {{"field", "label"}}}, {"y", {{"value", 0}}}}}}})}});
    }
    json y = {{"field", "value"}, {"type", "quantitative"}, {"title", "loss"}};
    if (positive) y["scale"] = {{"type", "log"}};
    out.push_back({"loss", "Loss", spec_text(lines_with_marks(chart_base("Loss", subtitle), loss, y, marks))});
  }
  if (!norms.empty()) {
    json subtitle = json::array({"global gradient L2 before clipping and, where recorded, after (log)"});
    json marks = json::array();
    if (std::isfinite(s.grad_norm_median)) {
      subtitle.push_back("dashed: the median before clipping, " + std::to_string(s.grad_norm_median));
      marks.push_back({{"data", {{"values", json::array({{{"median", s.grad_norm_median}}})}}},
                       {"mark", {{"type", "rule"}, {"strokeDash", {4, 4}}, {"color", theme::kThreshold}}},
                       {"encoding", {{"y", {{"field", "median"}, {"type", "quantitative"}}}}}});
    }
    const json y = {{"field", "value"}, {"type", "quantitative"}, {"scale", {{"type", "log"}}}, {"title", "|grad|"}};
    out.push_back({"grad-norm", "Gradient norm before clipping",
                   spec_text(lines_with_marks(chart_base("Gradient norm before clipping", subtitle), norms, y, marks))});
  }
  return out;
}

}  // namespace gradscope::internal
