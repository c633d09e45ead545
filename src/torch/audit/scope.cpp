#include "gradscope/torch/audit/scope.h"

#include <fnmatch.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <typeindex>

#include "gradscope/core/error.h"

namespace gradscope::torch {
namespace {

using ModulePtr = std::shared_ptr<::torch::nn::Module>;

bool owns_parameters(const ::torch::nn::Module& m) { return !m.parameters(/*recurse=*/true).empty(); }

std::vector<std::pair<std::string, ModulePtr>> children_with_parameters(const ::torch::nn::Module& m) {
  std::vector<std::pair<std::string, ModulePtr>> out;
  for (const auto& child : m.named_children())
    if (owns_parameters(*child.value())) out.emplace_back(child.key(), child.value());
  return out;
}

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::type_index, NodeScope>& registry() {
  static std::map<std::type_index, NodeScope> r;
  return r;
}

}  // namespace

NodeScope NodeScope::to_depth(int depth) {
  if (depth < 0) throw Error("scope depth must be >= 0, got " + std::to_string(depth));
  NodeScope s;
  s.mode = Mode::kDepth;
  s.depth = depth;
  return s;
}

NodeScope NodeScope::matching(std::vector<std::string> patterns) {
  NodeScope s;
  s.mode = Mode::kPatterns;
  s.patterns = std::move(patterns);
  return s;
}

std::vector<ScopedModule> resolve_scope(const ::torch::nn::Module& node, const NodeScope& scope,
                                        int& truncated) {
  if (scope.sample_every < 1) throw Error("scope sample_every must be >= 1");
  if (scope.max_modules < 0) throw Error("scope max_modules must be >= 0");
  std::vector<ScopedModule> out;
  switch (scope.mode) {
    case NodeScope::Mode::kAuto: {
      // Descend through wrappers that hold a single parameterised child.
      std::string prefix;
      auto kids = children_with_parameters(node);
      while (kids.size() == 1 && !kids[0].second->children().empty()) {
        prefix += kids[0].first + ".";
        kids = children_with_parameters(*kids[0].second);
      }
      for (auto& [name, m] : kids) out.emplace_back(prefix + name, m);
      break;
    }
    case NodeScope::Mode::kDepth: {
      if (scope.depth == 0) break;
      for (const auto& item : node.named_modules(/*name_prefix=*/"", /*include_self=*/false)) {
        const std::string& path = item.key();
        const long depth = 1 + std::count(path.begin(), path.end(), '.');
        if (depth == scope.depth && owns_parameters(*item.value())) out.emplace_back(path, item.value());
      }
      break;
    }
    case NodeScope::Mode::kPatterns: {
      for (const auto& item : node.named_modules("", /*include_self=*/false)) {
        for (const std::string& pattern : scope.patterns) {
          if (fnmatch(pattern.c_str(), item.key().c_str(), 0) == 0 && owns_parameters(*item.value())) {
            out.emplace_back(item.key(), item.value());
            break;
          }
        }
      }
      break;
    }
  }
  truncated = 0;
  if (static_cast<int>(out.size()) > scope.max_modules) {
    truncated = static_cast<int>(out.size()) - scope.max_modules;
    out.resize(static_cast<std::size_t>(scope.max_modules));
  }
  return out;
}

namespace internal {

void register_scope(const std::type_info& type, NodeScope scope) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  registry()[std::type_index(type)] = std::move(scope);
}

const NodeScope* registered_scope(const ::torch::nn::Module& module) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  const auto it = registry().find(std::type_index(typeid(module)));
  return it == registry().end() ? nullptr : &it->second;
}

}  // namespace internal
}  // namespace gradscope::torch
