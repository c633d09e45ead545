// What each round's trees say about themselves, without data: leaves, depth, leaf values,
// split gains, covers and the features split on.
#include <algorithm>
#include <cmath>
#include <map>

#include "trees/internal/parts.h"

namespace gradscope::tree_internal {
namespace {

Stats stats_of(const std::vector<double>& v) {
  return compute(
      TensorView::contiguous(v.data(), DType::kFloat64, {static_cast<int64_t>(v.size())}));
}

// Longest root-to-leaf path, counted in splits (a lone leaf has depth 0).
int32_t binary_depth(const Tree& tree) {
  int32_t deepest = 0;
  std::vector<std::pair<int32_t, int32_t>> stack{{0, 0}};
  while (!stack.empty()) {
    const auto [i, depth] = stack.back();
    stack.pop_back();
    const TreeNode& n = tree.nodes[static_cast<std::size_t>(i)];
    if (n.is_leaf()) {
      deepest = std::max(deepest, depth);
      continue;
    }
    stack.push_back({n.left, depth + 1});
    stack.push_back({n.right, depth + 1});
  }
  return deepest;
}

struct TreeSummary {
  std::vector<double> leaf_values;
  int32_t depth = 0;
  double cover = RoundDynamics::kNone;
  bool all_gains = true;  // every split has a finite gain
  std::map<int32_t, FeatureSplits> features;
  std::map<int32_t, std::vector<double>> gains;
};

TreeSummary summarize(const TreeEnsemble& model, const Tree& tree) {
  TreeSummary s;
  auto split = [&](int32_t feature, double gain) {
    FeatureSplits& f = s.features[feature];
    f.feature = feature;
    ++f.splits;
    if (std::isfinite(gain)) {
      f.gain += gain;
      s.gains[feature].push_back(gain);
    } else {
      s.all_gains = false;
    }
  };
  if (tree.oblivious()) {
    for (std::size_t leaf = 0; leaf < tree.leaf_values.size(); ++leaf)
      s.leaf_values.push_back(leaf_output(model, tree, static_cast<int32_t>(leaf)));
    // One split per level: every node of a level splits the same way. CatBoost files hold no
    // split gains, so the gain share falls back to counts.
    for (const ObliviousSplit& l : tree.levels) split(l.feature, RoundDynamics::kNone);
    s.depth = static_cast<int32_t>(tree.levels.size());
    if (!tree.leaf_weights.empty()) {
      s.cover = 0;
      for (double w : tree.leaf_weights) s.cover += w;
    }
    return s;
  }
  for (std::size_t i = 0; i < tree.nodes.size(); ++i) {
    const TreeNode& n = tree.nodes[i];
    if (n.is_leaf())
      s.leaf_values.push_back(leaf_output(model, tree, static_cast<int32_t>(i)));
    else
      split(n.feature, n.gain);
  }
  s.depth = binary_depth(tree);
  s.cover = tree.nodes[0].cover;  // the root's: all the training weight the tree saw
  return s;
}

}  // namespace

double leaf_output(const TreeEnsemble& model, const Tree& tree, int32_t leaf) {
  const double v = tree.oblivious() ? tree.leaf_values[static_cast<std::size_t>(leaf)]
                                    : tree.nodes[static_cast<std::size_t>(leaf)].value;
  // As tree_output: XGBoost multiplies float leaves by a float DART weight.
  if (model.dialect == TreeDialect::kXGBoost)
    return static_cast<double>(static_cast<float>(v) * static_cast<float>(tree.weight));
  return v * tree.weight;
}

void measure_model(const TreeEnsemble& model, TreeDynamicsReport& report) {
  const std::size_t outputs = static_cast<std::size_t>(model.num_outputs);
  report.per_round.assign(static_cast<std::size_t>(model.rounds), RoundDynamics{});
  std::vector<std::map<int32_t, FeatureSplits>> features(report.per_round.size());
  bool any_split = false, all_gains = true, all_covers = !model.trees.empty();
  for (std::size_t r = 0; r < report.per_round.size(); ++r) {
    report.per_round[r].round = static_cast<int32_t>(r);
    report.per_round[r].leaf_values.assign(outputs, Stats{});
  }
  for (const Tree& tree : model.trees) {
    RoundDynamics& r = report.per_round[static_cast<std::size_t>(tree.round)];
    const TreeSummary s = summarize(model, tree);
    ++r.trees;
    r.leaves += static_cast<int32_t>(s.leaf_values.size());
    r.max_depth = std::max(r.max_depth, s.depth);
    Stats& leaves = r.leaf_values[static_cast<std::size_t>(tree.output)];
    leaves = merge(leaves, stats_of(s.leaf_values));
    if (std::isfinite(s.cover))
      r.cover = (std::isfinite(r.cover) ? r.cover : 0) + s.cover;
    else
      all_covers = false;
    for (const auto& [f, split] : s.features) {
      FeatureSplits& into = features[static_cast<std::size_t>(tree.round)][f];
      into.feature = f;
      into.splits += split.splits;
      into.gain += split.gain;
      if (s.all_gains) into.gains = merge(into.gains, stats_of(s.gains.at(f)));
      any_split = true;
    }
    all_gains = all_gains && s.all_gains;
  }
  report.has_gain = any_split && all_gains;
  report.has_cover = all_covers;
  for (std::size_t r = 0; r < report.per_round.size(); ++r) {
    RoundDynamics& round = report.per_round[r];
    if (report.has_gain) round.gain = 0;
    for (auto& [f, split] : features[r]) {
      if (!report.has_gain) {  // partial gains would mislead: counts only
        split.gain = 0;
        split.gains = Stats{};
      }
      round.features.push_back(split);
      if (report.has_gain) round.gain += split.gain;
    }
    if (!report.has_cover) round.cover = RoundDynamics::kNone;
    Stats leaves;
    for (const Stats& per_output : round.leaf_values) leaves = merge(leaves, per_output);
    round.leaf_mean_abs = leaves.mean_abs();
    if (leaves.has_finite()) round.leaf_max_abs = leaves.max_abs;
  }
}

}  // namespace gradscope::tree_internal
