// Architecture: the audited nodes of a model with their types and parameter counts, in
// execution order. Adapters fill it; io renders it as JSON and Mermaid.
//
//   gradscope::Architecture a = audit.architecture();
//   for (const auto& n : a.nodes) std::cout << n.id << " " << n.parameters << "\n";
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gradscope {

/// One audited node or scoped submodule.
struct ArchitectureNode {
  std::string id;             ///< "encoder" or "encoder/backbone.0"
  std::string type;           ///< module type, e.g. "torch::nn::LinearImpl"
  int64_t order = -1;         ///< position in execution order (-1: never ran)
  int64_t parameters = 0;     ///< elements over all parameters
  int64_t trainable = 0;      ///< elements of parameters that require gradients
};

/// Nodes in execution order; submodules follow their node.
struct Architecture {
  std::vector<ArchitectureNode> nodes;
};

}  // namespace gradscope
