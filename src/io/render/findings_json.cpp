#include "gradscope/io/render/findings_json.h"

#include <cmath>

#include "gradscope/io/render/safe_text.h"
#include "render/internal/findings_codec.h"

namespace gradscope {
namespace internal {
namespace {

using Json = nlohmann::ordered_json;

// JSON has no NaN or Infinity: a number that is not finite is null.
Json number(double v) { return std::isfinite(v) ? Json(v) : Json(); }

}  // namespace

Json finding_to_json(const Finding& f) {
  Json evidence = Json::array();
  for (const FindingMeasure& m : f.evidence) {
    Json e = {{"name", m.name}, {"value", number(m.value)}};
    if (!m.comparison.empty()) {
      e["threshold"] = number(m.threshold);
      e["comparison"] = m.comparison;
    }
    evidence.push_back(std::move(e));
  }
  return {{"kind", finding_kind_name(f.kind)},
          {"type", f.type},
          {"node", f.node.empty() ? Json() : Json(f.node)},  // the whole run (flow, loss scale)
          {"since_step", f.since_step >= 0 ? Json(f.since_step) : Json()},
          {"premise", f.premise},
          {"implies", f.implies},
          {"action", f.action},
          {"action_code", f.action_code.empty() ? Json() : Json(f.action_code)},
          {"expected_effect", f.expected_effect},
          {"confidence", confidence_name(f.confidence)},
          {"evidence", evidence}};
}

Json findings_to_json(const std::vector<Finding>& findings) {
  Json out = Json::array();
  for (const Finding& f : findings) out.push_back(finding_to_json(f));
  return out;
}

}  // namespace internal

std::vector<Finding> run_findings(const Report& report, const FlowSummary& flow,
                                  const EmbeddingRunSummary* embedding,
                                  const TreeRunSummary* trees) {
  // The loss first: a divergence is the headline, the module flags after it its effects.
  std::vector<Finding> out = series_findings(report.series, report.thresholds);
  for (Finding& f : module_findings(report)) out.push_back(std::move(f));
  // A tree run records rounds, not gradients: its flow summary judges nothing (as in the HTML).
  if (!trees)
    if (auto f = flow_finding(flow, report.thresholds)) out.push_back(std::move(*f));
  if (auto f = loss_scale_finding(report.loss_scale)) out.push_back(std::move(*f));
  if (embedding)
    for (const EmbeddingTableSummary& t : embedding->tables)
      for (Finding& f : embedding_findings(t.report)) out.push_back(std::move(f));
  if (trees)
    for (Finding& f : tree_findings(trees->report)) out.push_back(std::move(f));
  return out;
}

std::string render_findings_json(const std::vector<Finding>& findings, int indent) {
  return json_text(internal::findings_to_json(findings).dump(
             indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace)) +
         "\n";
}

}  // namespace gradscope
