#include "gradscope/core/trees/append.h"

#include <string>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

[[noreturn]] void differ(const std::string& what, const std::string& a, const std::string& b) {
  throw Error("appending rounds: " + what + " " + b + " after " + a);
}

}  // namespace

void append_rounds(TreeEnsemble& model, const TreeEnsemble& later) {
  if (model.rounds == 0 && model.trees.empty() && model.base_score.empty()) {
    model = later;
    return;
  }
  // Everything that decides how the trees are summed and transformed must agree.
  if (later.dialect != model.dialect)
    differ("dialect", dialect_name(model.dialect), dialect_name(later.dialect));
  if (later.objective != model.objective) differ("objective", model.objective, later.objective);
  if (later.booster != model.booster) differ("booster", model.booster, later.booster);
  if (later.num_outputs != model.num_outputs)
    differ("outputs", std::to_string(model.num_outputs), std::to_string(later.num_outputs));
  if (later.num_features != model.num_features)
    differ("features", std::to_string(model.num_features), std::to_string(later.num_features));
  if (later.link != model.link || later.sigmoid_scale != model.sigmoid_scale ||
      later.scale != model.scale || later.average_output != model.average_output)
    throw Error("appending rounds: the link from raw scores to predictions differs");
  if (later.base_score != model.base_score) throw Error("appending rounds: the base score differs");
  const int32_t first = model.rounds;
  model.trees.reserve(model.trees.size() + later.trees.size());
  for (const Tree& t : later.trees) {
    model.trees.push_back(t);
    model.trees.back().round += first;
  }
  model.rounds += later.rounds;
  if (model.feature_names.empty()) model.feature_names = later.feature_names;
}

}  // namespace gradscope
