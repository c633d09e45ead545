#include "gradscope/io/render/run_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "gradscope/io/render/architecture.h"
#include "gradscope/io/render/findings_json.h"
#include "gradscope/io/render/json.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/render/table.h"
#include "gradscope/io/trees/text.h"
#include "embedding/internal/codec.h"
#include "render/internal/findings_codec.h"
#include "trees/internal/codec.h"

namespace gradscope {
namespace {

nlohmann::ordered_json number(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); }

}  // namespace

// Every field is what the run's database says, written by whoever made the run: shown escaped.
std::string render_run_header(const RunMetadata& m, const std::string& path) {
  std::string out = fmt::format("run {}: {}, started {}", terminal_text(path), terminal_text(m.name),
                                terminal_text(m.start_time));
  out += m.end_time.empty() ? " (not closed: running, or its writer stopped)" : ", ended " + terminal_text(m.end_time);
  out += fmt::format(", host {}, gradscope {}\n", terminal_text(m.host), terminal_text(m.gradscope_version));
  if (!m.command_line.empty()) out += "command: " + terminal_text(m.command_line) + "\n";
  return out + "\n";
}

std::string render_flow_summary(const FlowSummary& flow) {
  std::string out = fmt::format("\ngradient flow: {} ({} of {} frames with issues", flow_health_name(flow.health),
                                flow.issue_frames, flow.frames);
  if (flow.frames > 0) out += fmt::format(", {:.0f}%; steps {}..{}", 100.0 * flow.issue_ratio, flow.first_step, flow.last_step);
  out += ")\n";
  for (const std::string& r : flow.recommendations) out += "  - " + terminal_text(r) + "\n";  // they name nodes
  return out;
}

std::string render_run_json(const RunMetadata& m, const Report& report, const FlowSummary& flow,
                            const EmbeddingRunSummary* embedding, const TreeRunSummary* trees,
                            const RunSummary* summary, const std::vector<ReadDamage>* damage) {
  nlohmann::ordered_json doc;
  doc["run"] = {{"name", m.name},
                {"start_time", m.start_time},
                {"end_time", m.end_time.empty() ? nlohmann::ordered_json()
                                                : nlohmann::ordered_json(m.end_time)},
                {"host", m.host},
                {"command_line", m.command_line},
                {"gradscope_version", m.gradscope_version},
                {"schema_version", m.schema_version},
                {"unhealthy", run_unhealthy(report, flow, embedding, trees)}};
  const nlohmann::ordered_json rep = nlohmann::ordered_json::parse(render_json(report, -1));
  doc["gradscope_report"] = rep.at("gradscope_report");
  // One answer: `healthy` is the run's verdict (nodes, gradient flow, embedding tables, trees),
  // not the node table's alone, which would call a run with ZOMBIE_ROWS healthy.
  doc["gradscope_report"]["healthy"] = !doc["run"]["unhealthy"].get<bool>();
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
  if (embedding) {
    nlohmann::ordered_json tables = nlohmann::ordered_json::array(), correlations = nlohmann::ordered_json::array();
    for (const EmbeddingTableSummary& t : embedding->tables) tables.push_back(internal::report_to_json(t.report));
    for (const TowerCorrelation& c : embedding->correlations) correlations.push_back(internal::correlation_to_json(c));
    doc["embedding"] = {{"tables", tables}, {"gradient_norm_correlations", correlations}};
  }
  if (trees) doc["trees"] = internal::tree_summary_to_json(*trees).at("gradscope_tree_run");
  if (summary) {
    if (!summary->architecture.nodes.empty())
      doc["architecture"] =
          nlohmann::ordered_json::parse(render_architecture_json(summary->architecture)).at("architecture");
    doc["warnings"] = summary->warnings;
  }
  if (damage) {
    // The findings below judge only what was read: a damaged attention table's heads, say, are
    // missing from them, and this says so.
    nlohmann::ordered_json parts = nlohmann::ordered_json::array();
    for (const ReadDamage& d : *damage) parts.push_back({{"part", d.part}, {"what", d.what}});
    doc["damaged"] = !damage->empty();
    doc["damage"] = parts;
  }
  // Every finding above in the one agent schema (docs/agent-json.md); the keys above stay for
  // the programs that read them.
  doc["findings_version"] = kFindingsVersion;
  doc["findings"] = internal::findings_to_json(run_findings(report, flow, embedding, trees));
  return json_text(doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)) + "\n";
}

namespace {
// The rows a finding names: the first kShown, and where every one is (a finding on a 1M-row
// table can name thousands).
std::string listed_rows_line(const std::vector<int64_t>& rows) {
  constexpr std::size_t kShown = 20;
  if (rows.empty()) return {};
  std::string ids;
  for (std::size_t i = 0; i < std::min(kShown, rows.size()); ++i) ids += (i ? ", " : "") + std::to_string(rows[i]);
  if (rows.size() <= kShown) return "      rows: " + ids + "\n";
  return fmt::format("      rows: {}, ... ({} in all: every one in the run's embedding document (run.db), written out "
                     "by gradscope export RUN --format documents)\n",
                     ids, rows.size());
}
}  // namespace

std::string render_embedding_findings(const EmbeddingRunSummary& embedding) {
  std::string out = "\nembedding tables:\n";
  for (const EmbeddingTableSummary& t : embedding.tables) {
    const EmbeddingStats& s = t.report.stats;
    const std::size_t n = t.report.diagnostics.size();
    // Read back from embedding.json: any of its text may be hostile.
    // Lookups are counted by the tracker since per-lookup exposure; older files have none.
    const std::string gini = s.lookups == 0
                                 ? fmt::format("popularity Gini {:.3f}", s.popularity_gini)
                                 : fmt::format("lookup Gini {:.3f}, per step {:.3f}", s.lookup_gini, s.popularity_gini);
    out += fmt::format("  {} ({} rows, {:.1f}% exposed, {}): ", terminal_text(t.report.layer), s.num_embeddings,
                       s.active_coverage_pct, gini);
    out += n == 0 ? std::string("no findings\n") : fmt::format("{} finding{}\n", n, n == 1 ? "" : "s");
    // What to do comes from the finding (core/findings/findings.h), as in the JSON and the HTML.
    const std::vector<Finding> findings = embedding_findings(t.report);
    for (std::size_t k = 0; k < findings.size(); ++k) {
      out += fmt::format("    {} (confidence {:.2f}): {}\n      what to do: {}\n", terminal_text(findings[k].type),
                         t.report.diagnostics[k].confidence, terminal_text(findings[k].premise),
                         terminal_text(findings[k].action));
      out += listed_rows_line(t.report.diagnostics[k].rows);
    }
  }
  return out;
}

std::string embedding_verdict(const EmbeddingRunSummary* embedding) {
  std::string out;
  if (!embedding) return out;
  for (const EmbeddingTableSummary& t : embedding->tables) {
    if (t.report.diagnostics.empty()) continue;
    std::string types;
    for (const EmbeddingDiagnostic& d : t.report.diagnostics)
      types += (types.empty() ? "" : ",") + terminal_text(d.type);
    out += (out.empty() ? "; embedding: " : ", ") + terminal_text(t.report.layer) + " [" + types + "]";
  }
  return out;
}

std::string render_run_verdict(const Report& report, const FlowSummary& flow,
                               const EmbeddingRunSummary* embedding, const TreeRunSummary* trees) {
  const std::string tables = embedding_verdict(embedding);  // "; embedding: item [ZOMBIE_ROWS]"
  const std::string boosted = tree_verdict(trees);          // "; trees: STAGNANT from round 0"
  const std::string nodes = render_verdict(report);          // "verdict: healthy (2 nodes, ...)"
  // What the healthy parts say when the run has them.
  const std::string quiet =
      std::string(embedding && tables.empty() ? "; embedding: no findings" : "") +
      (trees && boosted.empty() ? "; trees: " + tree_quiet_verdict(*trees) : "");
  if (!report.healthy())
    return nodes + (tables.empty() ? "" : tables) + (boosted.empty() ? "" : boosted) + quiet;
  const std::string healthy_nodes = nodes.substr(std::string("verdict: ").size());  // "healthy (...)"
  const bool flow_bad = flow.health >= FlowHealth::kProblemsDetected;
  if (!flow_bad && tables.empty() && boosted.empty()) return nodes + quiet;
  std::string line = "verdict: unhealthy: ";
  std::string why;
  if (flow_bad) why = "gradient flow " + std::string(flow_health_name(flow.health));
  for (const std::string& part : {tables, boosted})
    if (!part.empty())
      why += (why.empty() ? "" : "; ") + part.substr(2);  // "embedding: ...", "trees: ..."
  return line + why + "; nodes " + healthy_nodes;
}

bool run_unhealthy(const Report& report, const FlowSummary& flow,
                   const EmbeddingRunSummary* embedding, const TreeRunSummary* trees) {
  return !report.healthy() || flow.health >= FlowHealth::kProblemsDetected ||
         !embedding_verdict(embedding).empty() || !tree_verdict(trees).empty();
}

}  // namespace gradscope
