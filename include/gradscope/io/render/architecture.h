// The architecture snapshot of an audit as JSON, and as a Mermaid flowchart of the nodes with
// their gradient norms and flags.
//
//   std::ofstream("architecture.json") << gradscope::render_architecture_json(audit.architecture());
//   std::ofstream("flow.mmd") << gradscope::render_mermaid(audit.architecture(), audit.report());
#pragma once

#include <string>

#include "gradscope/core/audit/architecture.h"
#include "gradscope/core/audit/report.h"

namespace gradscope {

/// {"architecture": {"nodes": [{"id", "parent", "type", "order", "parameters", "trainable"}]}}
std::string render_architecture_json(const Architecture& architecture);

/// A Mermaid `flowchart LR`: top-level nodes in execution order joined by arrows (execution
/// order, not data flow), each other node inside the subgraph of its nearest ancestor node by
/// path ("a/x/b" inside "a" when "a/x" is no node), each labelled with its mean |param grad|
/// (or |out grad|) and flags; flagged nodes are red. Mermaid ids are generated ("n0", "n1",
/// ...); names reach the chart only through mermaid_label.
std::string render_mermaid(const Architecture& architecture, const Report& report);

}  // namespace gradscope
