#include "html/internal/model.h"

#include <fmt/format.h>

#include "gradscope/io/html/report.h"

namespace gradscope::internal {

std::string model_section(const Architecture& architecture, const std::vector<std::string>& warnings) {
  if (architecture.nodes.empty() && warnings.empty()) return {};
  std::string out = "<section id=\"model\"><h2>Model</h2>\n";
  if (!warnings.empty()) {
    out += "<p>The audit warned:</p>\n<ul class=\"warnings\">\n";
    for (const std::string& w : warnings) out += "<li>" + html_escape(w) + "</li>\n";
    out += "</ul>\n";
  }
  if (!architecture.nodes.empty()) {
    out += "<table class=\"architecture\">\n<thead><tr><th>order</th><th>node</th><th>type</th>"
           "<th>parameters</th><th>trainable</th></tr></thead>\n<tbody>\n";
    for (const ArchitectureNode& n : architecture.nodes)
      out += fmt::format("<tr><td>{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td>{}</td><td>{}</td></tr>\n",
                         n.order >= 0 ? std::to_string(n.order) : std::string("never ran"), html_escape(n.id),
                         html_escape(n.type), n.parameters, n.trainable);
    out += "</tbody>\n</table>\n";
  }
  return out + "</section>\n";
}

}  // namespace gradscope::internal
