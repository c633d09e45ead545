#include "gradscope/io/run_report.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "gradscope/io/json.h"

namespace gradscope {
namespace {

nlohmann::ordered_json number(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); }

}  // namespace

std::string render_run_header(const RunMetadata& m, const std::string& path) {
  std::string out = fmt::format("run {}: {}, started {}", path, m.name, m.start_time);
  out += m.end_time.empty() ? " (not closed: running, or its writer stopped)" : ", ended " + m.end_time;
  out += fmt::format(", host {}, gradscope {}\n", m.host, m.gradscope_version);
  if (!m.command_line.empty()) out += "command: " + m.command_line + "\n";
  return out + "\n";
}

std::string render_flow_summary(const FlowSummary& flow) {
  std::string out = fmt::format("\ngradient flow: {} ({} of {} frames with issues", flow_health_name(flow.health),
                                flow.issue_frames, flow.frames);
  if (flow.frames > 0) out += fmt::format(", {:.0f}%; steps {}..{}", 100.0 * flow.issue_ratio, flow.first_step, flow.last_step);
  out += ")\n";
  for (const std::string& r : flow.recommendations) out += "  - " + r + "\n";
  return out;
}

std::string render_run_json(const RunMetadata& m, const Report& report, const FlowSummary& flow) {
  nlohmann::ordered_json doc;
  doc["run"] = {{"name", m.name},
                {"start_time", m.start_time},
                {"end_time", m.end_time.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(m.end_time)},
                {"host", m.host},
                {"command_line", m.command_line},
                {"gradscope_version", m.gradscope_version},
                {"schema_version", m.schema_version},
                {"unhealthy", run_unhealthy(report, flow)}};
  const nlohmann::ordered_json rep = nlohmann::ordered_json::parse(render_json(report, -1));
  doc["gradscope_report"] = rep.at("gradscope_report");
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const NodeFlow& n : flow.nodes) {
    nodes.push_back({{"node", n.node},
                     {"frames", n.frames},
                     {"vanishing_frames", n.vanishing_frames},
                     {"exploding_frames", n.exploding_frames},
                     {"first_vanishing", n.first_vanishing >= 0 ? nlohmann::ordered_json(n.first_vanishing) : nlohmann::ordered_json()},
                     {"first_exploding", n.first_exploding >= 0 ? nlohmann::ordered_json(n.first_exploding) : nlohmann::ordered_json()},
                     {"median_norm", number(n.median_norm)},
                     {"min_norm", number(n.min_norm)},
                     {"max_norm", number(n.max_norm)}});
  }
  doc["gradient_flow"] = {{"health", flow_health_name(flow.health)},
                          {"frames", flow.frames},
                          {"issue_frames", flow.issue_frames},
                          {"issue_ratio", flow.issue_ratio},
                          {"nodes", nodes},
                          {"recommendations", flow.recommendations}};
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

bool run_unhealthy(const Report& report, const FlowSummary& flow) {
  return !report.healthy() || flow.health >= FlowHealth::kProblemsDetected;
}

}  // namespace gradscope
