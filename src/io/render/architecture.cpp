#include "gradscope/io/render/architecture.h"

#include <cmath>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/render/table.h"

namespace gradscope {
namespace {

std::string parent_of(const std::string& id) {
  const auto slash = id.rfind('/');
  return slash == std::string::npos ? std::string() : id.substr(0, slash);
}

// Index of the node that is `id`'s nearest ancestor by path ("a/b/c": "a/b", else "a"), or -1:
// a node whose path parent is not a node hangs from the next one up, or from the top level.
int path_parent(const std::string& id, const std::map<std::string, int>& index) {
  for (auto slash = id.rfind('/'); slash != std::string::npos;
       slash = slash > 0 ? id.rfind('/', slash - 1) : std::string::npos) {
    const auto it = index.find(id.substr(0, slash));
    if (it != index.end()) return it->second;
  }
  return -1;
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
  const auto& nodes = architecture.nodes;
  // Mermaid ids are generated ("n<i>"), never derived from names; a name only ever reaches a
  // quoted label through mermaid_label.
  std::map<std::string, int> index;
  for (std::size_t i = 0; i < nodes.size(); ++i) index.emplace(nodes[i].id, static_cast<int>(i));
  std::vector<int> parent(nodes.size());
  std::vector<std::vector<int>> children(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    parent[i] = path_parent(nodes[i].id, index);
    if (parent[i] >= 0) children[static_cast<std::size_t>(parent[i])].push_back(static_cast<int>(i));
  }
  // The id below its parent's ("backbone.0" inside "encoder"), or the whole id at the top.
  auto shown = [&](std::size_t i) {
    if (parent[i] < 0) return nodes[i].id;
    return nodes[i].id.substr(nodes[static_cast<std::size_t>(parent[i])].id.size() + 1);  // a prefix, then '/'
  };
  auto node_line = [&](std::size_t i, const std::string& indent) {
    const auto it = by_id.find(nodes[i].id);
    const NodeReport* r = it == by_id.end() ? nullptr : it->second;
    std::string label = mermaid_label(shown(i));
    std::string cls = "healthy";
    if (r) {
      const bool param = !std::isnan(r->param_grad_l2);
      label += "<br/>" + std::string(param ? "|grad| " : "|out grad| ") +
               format_measure(param ? r->param_grad_l2 : r->out_grad_l2);
      label += "<br/>" + mermaid_label(r->flags_label(" "));
      if (!r->flags.contains(Flag::kHealthy)) cls = "flagged";
    }
    if (nodes[i].order < 0) cls = "idle";
    return indent + "n" + std::to_string(i) + "[\"" + label + "\"]:::" + cls + "\n";
  };

  std::string out = "flowchart LR\n";
  // A node with children is a subgraph holding itself and them, nested as deep as the paths go.
  std::function<void(std::size_t, const std::string&)> draw = [&](std::size_t i, const std::string& indent) {
    if (children[i].empty()) {
      out += node_line(i, indent);
      return;
    }
    out += indent + "subgraph n" + std::to_string(i) + "_group[\"" + mermaid_label(shown(i)) + "\"]\n";
    out += node_line(i, indent + "  ");
    for (int c : children[i]) draw(static_cast<std::size_t>(c), indent + "  ");
    out += indent + "end\n";
  };
  std::vector<std::size_t> top;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    if (parent[i] >= 0) continue;
    if (nodes[i].order >= 0) top.push_back(i);  // nodes that never ran stay out of the chain
    draw(i, "  ");
  }
  for (std::size_t k = 1; k < top.size(); ++k)
    out += "  n" + std::to_string(top[k - 1]) + " --> n" + std::to_string(top[k]) + "\n";
  out += "  classDef healthy fill:#e8f5e9,stroke:#2e7d32\n";
  out += "  classDef flagged fill:#ffebee,stroke:#c62828\n";
  out += "  classDef idle fill:#eeeeee,stroke:#9e9e9e,stroke-dasharray: 4 2\n";
  return out;
}

}  // namespace gradscope
