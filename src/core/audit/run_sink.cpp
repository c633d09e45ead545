// node_values / apply_node_values: the report's values that no record holds, and back.
#include "gradscope/core/audit/run_sink.h"

#include <cmath>
#include <string>
#include <type_traits>
#include <unordered_map>

namespace gradscope {
namespace {

// Report::loss_scale's counts, each a run-level value named kLossScalePrefix + name.
template <class F>
void each_loss_scale_field(LossScaleReport& r, F&& f) {
  f("steps", r.steps);
  f("skipped", r.skipped);
  f("first_skipped", r.first_skipped);
  f("last_skipped", r.last_skipped);
  f("first_fit", r.first_fit);
  f("steps_after_fit", r.steps_after_fit);
  f("skipped_after_fit", r.skipped_after_fit);
  f("trailing_skipped", r.trailing_skipped);
  f("first_scale", r.first_scale);
  f("last_scale", r.last_scale);
  f("min_scale", r.min_scale);
}

// Run-level value names of the lists, after kLossScalePrefix: one value per skipped step,
// and "scale_at.<step>" per scale change.
constexpr const char* kSkippedStep = "skipped_step";
constexpr const char* kScaleAt = "scale_at.";

bool whole_step(double v) { return std::isfinite(v) && v >= 0 && v < 9e15 && v == std::floor(v); }

}  // namespace

std::vector<NodeValue> node_values(const Report& report) {
  std::vector<NodeValue> values;
  for (const NodeReport& n : report.nodes)
    if (!std::isnan(n.grad_snr)) values.push_back({n.node, kGradSnr, n.grad_snr});  // +inf: no noise
  // A value row rather than a new column, so runs of older builds and older readers still work.
  const NonFiniteOrigin& o = report.nonfinite_origin;
  if (o.found() && o.rank >= 0) values.push_back({o.node, kNonFiniteRank, static_cast<double>(o.rank)});
  if (report.loss_scale.steps > 0) {
    LossScaleReport ls = report.loss_scale;
    each_loss_scale_field(ls, [&](const char* name, auto value) {
      values.push_back({"", std::string(kLossScalePrefix) + name, static_cast<double>(value)});
    });
    for (int64_t step : ls.skipped_steps)
      values.push_back({"", std::string(kLossScalePrefix) + kSkippedStep, static_cast<double>(step)});
    for (const auto& [step, scale] : ls.scale_changes)
      values.push_back({"", std::string(kLossScalePrefix) + kScaleAt + std::to_string(step), scale});
  }
  return values;
}

void apply_node_values(Report& report, const std::vector<NodeValue>& values) {
  std::unordered_map<std::string, NodeReport*> by_id;
  for (NodeReport& n : report.nodes) by_id.emplace(n.node, &n);
  bool loss_scale = false;
  for (const NodeValue& v : values) {
    if (v.node.empty() && v.name.rfind(kLossScalePrefix, 0) == 0) {
      const std::string field = v.name.substr(std::char_traits<char>::length(kLossScalePrefix));
      loss_scale = true;
      if (field == kSkippedStep) {
        if (whole_step(v.value) && report.loss_scale.skipped_steps.size() < LossScaleReport::kListed)
          report.loss_scale.skipped_steps.push_back(static_cast<int64_t>(v.value));
        continue;
      }
      if (field.rfind(kScaleAt, 0) == 0) {
        const std::string digits = field.substr(std::char_traits<char>::length(kScaleAt));
        const bool number = !digits.empty() && digits.size() < 19 &&
                            digits.find_first_not_of("0123456789") == std::string::npos;
        if (number && report.loss_scale.scale_changes.size() < LossScaleReport::kListed)
          report.loss_scale.scale_changes.emplace_back(std::stoll(digits), v.value);
        continue;
      }
      each_loss_scale_field(report.loss_scale, [&](const char* name, auto& value) {
        if (field != name) return;
        using T = std::decay_t<decltype(value)>;
        // A damaged value leaves its field as it was rather than a count from a NaN.
        if constexpr (std::is_integral_v<T>) {
          if (std::isfinite(v.value) && std::fabs(v.value) < 9e15) value = static_cast<T>(v.value);
        } else {
          value = v.value;
        }
      });
      continue;
    }
    const auto it = by_id.find(v.node);
    if (it == by_id.end()) continue;
    if (v.name == kGradSnr) it->second->grad_snr = v.value;
    if (v.name == kNonFiniteRank && report.nonfinite_origin.node == v.node && v.value >= 0)
      report.nonfinite_origin.rank = static_cast<int64_t>(v.value);
  }
  if (loss_scale) judge_loss_scale(report.loss_scale);
}

}  // namespace gradscope
