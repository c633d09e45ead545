#include "gradscope/io/architecture.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "gradscope/io/table.h"

namespace gradscope {
namespace {

std::string parent_of(const std::string& id) {
  const auto slash = id.rfind('/');
  return slash == std::string::npos ? std::string() : id.substr(0, slash);
}

// Mermaid labels are quoted; its entity codes keep quotes and angle brackets literal.
std::string mermaid_text(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"': out += "#quot;"; break;
      case '<': out += "#lt;"; break;
      case '>': out += "#gt;"; break;
      case '\n': out += ' '; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

std::string render_architecture_json(const Architecture& architecture) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const ArchitectureNode& n : architecture.nodes) {
    const std::string parent = parent_of(n.id);
    nodes.push_back({{"id", n.id},
                     {"parent", parent.empty() ? nlohmann::json() : nlohmann::json(parent)},
                     {"type", n.type},
                     {"order", n.order >= 0 ? nlohmann::json(n.order) : nlohmann::json()},
                     {"parameters", n.parameters},
                     {"trainable", n.trainable}});
  }
  return nlohmann::json{{"architecture", {{"nodes", nodes}}}}.dump(2, ' ', false,
                                                                   nlohmann::json::error_handler_t::replace) +
         "\n";
}

std::string render_mermaid(const Architecture& architecture, const Report& report) {
  std::map<std::string, const NodeReport*> by_id;
  for (const NodeReport& n : report.nodes) by_id[n.node] = &n;
  std::map<std::string, std::string> key;  // node id -> mermaid id
  for (std::size_t i = 0; i < architecture.nodes.size(); ++i) key[architecture.nodes[i].id] = "n" + std::to_string(i);

  auto node_line = [&](const ArchitectureNode& a, const std::string& indent) {
    const auto it = by_id.find(a.id);
    const NodeReport* r = it == by_id.end() ? nullptr : it->second;
    const std::string shown = parent_of(a.id).empty() ? a.id : a.id.substr(parent_of(a.id).size() + 1);
    std::string label = mermaid_text(shown);
    std::string cls = "healthy";
    if (r) {
      const bool param = !std::isnan(r->param_grad_l2);
      label += "<br/>" + std::string(param ? "|grad| " : "|out grad| ") +
               format_measure(param ? r->param_grad_l2 : r->out_grad_l2);
      label += "<br/>" + mermaid_text(r->flags_label(" "));
      if (!r->flags.contains(Flag::kHealthy)) cls = "flagged";
    }
    if (a.order < 0) cls = "idle";
    return indent + key[a.id] + "[\"" + label + "\"]:::" + cls + "\n";
  };

  std::string out = "flowchart LR\n";
  std::vector<std::string> top;
  for (const ArchitectureNode& a : architecture.nodes) {
    if (!parent_of(a.id).empty()) continue;
    if (a.order >= 0) top.push_back(a.id);  // nodes that never ran stay out of the chain
    bool has_children = false;
    for (const ArchitectureNode& c : architecture.nodes) has_children |= parent_of(c.id) == a.id;
    if (!has_children) {
      out += node_line(a, "  ");
      continue;
    }
    out += "  subgraph " + key[a.id] + "_group[\"" + mermaid_text(a.id) + "\"]\n";
    out += node_line(a, "    ");
    for (const ArchitectureNode& c : architecture.nodes)
      if (parent_of(c.id) == a.id) out += node_line(c, "    ");
    out += "  end\n";
  }
  for (std::size_t i = 1; i < top.size(); ++i) out += "  " + key[top[i - 1]] + " --> " + key[top[i]] + "\n";
  out += "  classDef healthy fill:#e8f5e9,stroke:#2e7d32\n";
  out += "  classDef flagged fill:#ffebee,stroke:#c62828\n";
  out += "  classDef idle fill:#eeeeee,stroke:#9e9e9e,stroke-dasharray: 4 2\n";
  return out;
}

}  // namespace gradscope
