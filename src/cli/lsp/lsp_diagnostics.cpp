#include "lsp_diagnostics.h"

#include <algorithm>
#include <map>

namespace gradscope::cli {
namespace {

using Json = nlohmann::json;

// The flags that break training outright (a NaN, a dead or vanishing path, an
// explosion): what an editor's red squiggle is for. The milder ones (stagnant,
// saturated, channels, leakage, frozen, no data) are warnings.
bool breaks_training(const Finding& f) {
  for (const char* t : {"NAN", "INF", "EXPLODING", "DEAD", "VANISHING"})
    if (f.kind == FindingKind::kModule && f.type == t) return true;
  return false;
}

Json range_of(const SourceDefinition& d) {
  return {{"start", {{"line", d.line}, {"character", d.begin}}},
          {"end", {{"line", d.line}, {"character", d.end}}}};
}

// Markdown's special characters in a run's strings (node names are data),
// backslash-escaped.
std::string md(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (std::string_view("\\`*_[]<>|#").find(c) != std::string_view::npos) out.push_back('\\');
    out.push_back(c == '\n' || c == '\r' ? ' ' : c);
  }
  return out;
}

// Every node the run has something to say about: the report's nodes, and the
// nodes of findings that are not module nodes (embedding tables), each with its
// findings.
std::map<std::string, std::vector<const Finding*>> nodes_of(const LspRun& run) {
  std::map<std::string, std::vector<const Finding*>> nodes;
  for (const NodeReport& n : run.report().nodes) nodes[n.node];
  for (const Finding& f : run.findings())
    if (!f.node.empty() && f.kind != FindingKind::kTrees) nodes[f.node].push_back(&f);
  return nodes;
}

bool covers(const SourceDefinition& d, int line, int column) {
  return d.line == line && column >= d.begin && column <= d.end;
}

void node_markdown(const LspRun& run, const std::string& node,
                   const std::vector<const Finding*>& findings, std::string& out) {
  out += "**gradscope** node " + md(node) + " in run " + md(run.name()) + " (" +
         std::to_string(run.steps()) + " steps)\n\n";
  if (findings.empty()) {
    out += "healthy: no finding\n\n";
    return;
  }
  for (const Finding* f : findings) {
    out += "**" + f->type + "** (confidence " + confidence_name(f->confidence);
    if (f->since_step >= 0) out += ", since step " + std::to_string(f->since_step);
    out += "): " + md(f->premise) + "\n\n";
    if (!f->implies.empty()) out += md(f->implies) + "\n\n";
    out += "What to do: " + md(f->action) + "\n\n";
    if (f->evidence.empty()) continue;
    out += "| evidence | value | threshold |\n|---|---|---|\n";
    for (const FindingMeasure& m : f->evidence) {
      const std::string threshold =
          m.comparison.empty() ? "" : m.comparison + " " + shown_number(m.threshold);
      out += "| " + md(m.name) + " | " + shown_number(m.value) + " | " + md(threshold) + " |\n";
    }
    out += "\n";
  }
}

}  // namespace

int diagnostic_severity(const Finding& f) {
  if (f.confidence == Confidence::kLow) return 3;
  return breaks_training(f) ? 1 : 2;
}

std::string diagnostic_message(const Finding& f) {
  return f.type + " (" + f.node + "): " + f.premise + "\nWhat to do: " + f.action;
}

Json diagnostics_json(const LspRun& run, const std::vector<SourceDefinition>& defs) {
  std::vector<std::pair<const SourceDefinition*, const Finding*>> found;
  for (const Finding& f : run.findings()) {
    if (f.node.empty() || f.kind == FindingKind::kTrees) continue;  // no definition in a source file
    for (const SourceDefinition* d : definitions_of(f.node, defs)) found.emplace_back(d, &f);
  }
  // Source order; at one definition, the run's order (worst first).
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first->line, a.first->begin) < std::tie(b.first->line, b.first->begin);
  });
  Json out = Json::array();
  for (const auto& [d, f] : found)
    out.push_back({{"range", range_of(*d)},
                   {"severity", diagnostic_severity(*f)},
                   {"code", f->type},
                   {"source", "gradscope"},
                   {"message", diagnostic_message(*f)}});
  return out;
}

std::optional<std::string> hover_markdown(const LspRun& run,
                                          const std::vector<SourceDefinition>& defs, int line,
                                          int column) {
  std::string out;
  for (const auto& [node, findings] : nodes_of(run))
    for (const SourceDefinition* d : definitions_of(node, defs))
      if (covers(*d, line, column)) {
        node_markdown(run, node, findings, out);
        break;
      }
  if (out.empty()) return std::nullopt;
  return out;
}

}  // namespace gradscope::cli
