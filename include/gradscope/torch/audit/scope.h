// NodeScope: which submodules inside an audited node get their own records.
//
//   opts.scopes["encoder"] = gradscope::torch::NodeScope::matching({"backbone.*.attn"});
//   gradscope::torch::register_scope<MyBlockImpl>(gradscope::torch::NodeScope::to_depth(2));
//
// Precedence: a per-call scope (AuditOptions::scopes) > a scope the module type declared
// once (register_scope) > auto (direct children with parameters, descending through
// single-child wrappers).
#pragma once

#include <torch/nn/module.h>

#include <memory>
#include <string>
#include <typeinfo>
#include <utility>
#include <vector>

namespace gradscope::torch {

/// How to pick submodules inside a node, and how often to record them.
struct NodeScope {
  enum class Mode { kAuto, kDepth, kPatterns };
  Mode mode = Mode::kAuto;
  int depth = 1;                      ///< kDepth: modules exactly this deep below the node
  std::vector<std::string> patterns;  ///< kPatterns: fnmatch on paths like "backbone.0.attn"
  int sample_every = 1;               ///< record submodules every N audited steps
  int max_modules = 32;               ///< more are dropped, with a warning

  static NodeScope automatic() { return {}; }
  static NodeScope to_depth(int depth);
  static NodeScope matching(std::vector<std::string> patterns);
  /// No submodules: the node is measured as a whole only.
  static NodeScope none() { return to_depth(0); }
};

/// A submodule chosen by a scope: its path relative to the node ("backbone.0") and module.
using ScopedModule = std::pair<std::string, std::shared_ptr<::torch::nn::Module>>;

/// Applies `scope` to `node`: submodules that own parameters, in registration order. Sets
/// `truncated` to the number dropped by max_modules.
std::vector<ScopedModule> resolve_scope(const ::torch::nn::Module& node, const NodeScope& scope,
                                        int& truncated);

namespace internal {
void register_scope(const std::type_info& type, NodeScope scope);
/// The scope registered for the dynamic type of `module`, if any.
const NodeScope* registered_scope(const ::torch::nn::Module& module);
}  // namespace internal

/// Declares once the scope every module of type `ModuleImpl` uses (e.g. a transformer block).
template <class ModuleImpl>
void register_scope(NodeScope scope) {
  internal::register_scope(typeid(ModuleImpl), std::move(scope));
}

}  // namespace gradscope::torch
