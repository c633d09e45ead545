// Evaluation of a TreeEnsemble by each library's own rules. Sources, per dialect:
//   XGBoost 1.7 src/predictor/predict_fn.h GetNextNode, src/common/categorical.h Decision,
//     cpu_predictor.cc (float32 sums from the base margin, tree by tree), gbm/gbtree.h Dart
//     (each tree's output times its weight_drop).
//   LightGBM include/LightGBM/tree.h NumericalDecision / CategoricalDecision, gbdt_prediction.cpp.
//   CatBoost oblivious trees: bit l of the leaf index is float(x) > border of level l.
#include "gradscope/core/trees/model.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

// LightGBM's kZeroThreshold (meta.h): a value this close to 0 is "zero" for MissingType::kZero.
constexpr double kLightGBMZero = 1e-35f;
// Oblivious trees deeper than this would need more than 16M leaves; CatBoost allows 16.
constexpr std::size_t kMaxObliviousDepth = 24;

bool in_categories(const Tree& tree, const TreeNode& node, int64_t category) {
  const auto begin = tree.categories.begin() + node.categories_begin;
  const auto end = tree.categories.begin() + node.categories_end;
  return std::binary_search(begin, end, category);
}

int32_t next_xgboost(const Tree& tree, const TreeNode& node, double x) {
  if (std::isnan(x)) return node.default_left ? node.left : node.right;
  const float fx = static_cast<float>(x);
  if (!node.categorical) return fx < static_cast<float>(node.threshold) ? node.left : node.right;
  // Categories listed in the split go right; an invalid category (negative or at least
  // 2^24, past exact float integers) goes left, as does one the split never saw.
  if (fx < 0 || fx >= 16777216.0f) return node.left;
  return in_categories(tree, node, static_cast<int64_t>(fx)) ? node.right : node.left;
}

int32_t next_lightgbm(const Tree& tree, const TreeNode& node, double x) {
  if (!node.categorical) {
    if (std::isnan(x) && node.missing != MissingType::kNaN) x = 0;
    const bool zero = x >= -kLightGBMZero && x <= kLightGBMZero;
    if ((node.missing == MissingType::kZero && zero) ||
        (node.missing == MissingType::kNaN && std::isnan(x)))
      return node.default_left ? node.left : node.right;
    return x <= node.threshold ? node.left : node.right;
  }
  // Categories listed go left. LightGBM casts the value to int (toward zero, so -0.5 is
  // category 0) and sends NaN and negative results right whatever the missing type (v3+;
  // earlier versions cast NaN first, which gives INT_MIN on x86: right too). Values past
  // int's range are undefined there and match no category here.
  if (std::isnan(x) || x <= -1.0 || x >= 2147483648.0) return node.right;
  return in_categories(tree, node, static_cast<int64_t>(x)) ? node.left : node.right;
}

int32_t oblivious_leaf(const Tree& tree, const double* row) {
  int32_t leaf = 0;
  for (std::size_t l = 0; l < tree.levels.size(); ++l) {
    const ObliviousSplit& s = tree.levels[l];
    const double x = row[s.feature];
    const bool bit = std::isnan(x) ? s.nan_true : static_cast<float>(x) > s.border;
    leaf |= static_cast<int32_t>(bit) << l;
  }
  return leaf;
}

double leaf_value(const Tree& tree, int32_t leaf) {
  return tree.oblivious() ? tree.leaf_values[static_cast<std::size_t>(leaf)]
                          : tree.nodes[static_cast<std::size_t>(leaf)].value;
}

[[noreturn]] void bad_tree(std::size_t t, const std::string& what) {
  throw Error("tree " + std::to_string(t) + ": " + what);
}

[[noreturn]] void bad(const std::string& what) { throw Error(what); }

void check_binary(const TreeEnsemble& m, const Tree& tree) {
  const std::size_t n = tree.nodes.size();
  if (n == 0) bad("no nodes");
  if (n > static_cast<std::size_t>(INT32_MAX)) bad("too many nodes");
  // Every node reached exactly once from the root: a tree, so every walk ends at a leaf.
  std::vector<bool> seen(n, false);
  std::set<std::pair<uint32_t, uint32_t>> sorted_ranges;
  std::vector<int32_t> stack{0};
  seen[0] = true;
  std::size_t reached = 1;
  while (!stack.empty()) {
    const int32_t i = stack.back();
    stack.pop_back();
    const TreeNode& node = tree.nodes[static_cast<std::size_t>(i)];
    const std::string where = "node " + std::to_string(i) + ": ";
    if (node.is_leaf()) {
      if (node.right >= 0) bad(where + "a right child without a left one");
      continue;
    }
    if (node.feature < 0 || node.feature >= m.num_features)
      bad(where + "split feature " + std::to_string(node.feature) + " outside the model's " +
          std::to_string(m.num_features) + " features");
    if (node.categorical) {
      if (node.categories_begin > node.categories_end ||
          node.categories_end > tree.categories.size())
        bad(where + "category range outside the tree's category list");
      // Splits may share one range (LightGBM's category sets): each is checked once, so the
      // check costs the length of the list, not that times the number of splits.
      const bool checked =
          !sorted_ranges.emplace(node.categories_begin, node.categories_end).second;
      if (!checked && !std::is_sorted(tree.categories.begin() + node.categories_begin,
                                      tree.categories.begin() + node.categories_end))
        bad(where + "categories not sorted");
    }
    for (const int32_t child : {node.left, node.right}) {
      if (child < 0 || static_cast<std::size_t>(child) >= n)
        bad(where + "child " + std::to_string(child) + " outside the tree's " + std::to_string(n) +
            " nodes");
      if (seen[static_cast<std::size_t>(child)])
        bad(where + "child " + std::to_string(child) + " is reached twice (not a tree)");
      seen[static_cast<std::size_t>(child)] = true;
      ++reached;
      stack.push_back(child);
    }
  }
  if (reached != n) bad(std::to_string(n - reached) + " nodes unreachable from the root");
}

void check_oblivious(const TreeEnsemble& m, const Tree& tree) {
  if (tree.levels.size() > kMaxObliviousDepth)
    bad("depth " + std::to_string(tree.levels.size()) + " above " +
        std::to_string(kMaxObliviousDepth));
  for (std::size_t l = 0; l < tree.levels.size(); ++l)
    if (tree.levels[l].feature < 0 || tree.levels[l].feature >= m.num_features)
      bad("level " + std::to_string(l) + ": split feature " +
          std::to_string(tree.levels[l].feature) + " outside the model's " +
          std::to_string(m.num_features) + " features");
  const std::size_t leaves = std::size_t{1} << tree.levels.size();
  if (tree.leaf_values.size() != leaves)
    bad(std::to_string(tree.leaf_values.size()) + " leaf values for depth " +
        std::to_string(tree.levels.size()) + " (needs " + std::to_string(leaves) + ")");
  if (!tree.leaf_weights.empty() && tree.leaf_weights.size() != leaves)
    bad(std::to_string(tree.leaf_weights.size()) + " leaf weights for " + std::to_string(leaves) +
        " leaves");
}

}  // namespace

const char* dialect_name(TreeDialect dialect) {
  switch (dialect) {
    case TreeDialect::kXGBoost:
      return "xgboost";
    case TreeDialect::kLightGBM:
      return "lightgbm";
    case TreeDialect::kCatBoost:
      return "catboost";
  }
  return "?";
}

int32_t TreeEnsemble::trees_per_round() const {
  return rounds > 0 ? static_cast<int32_t>(trees.size() / static_cast<std::size_t>(rounds)) : 0;
}

std::string TreeEnsemble::feature_name(int32_t f) const {
  if (f >= 0 && static_cast<std::size_t>(f) < feature_names.size())
    return feature_names[static_cast<std::size_t>(f)];
  return "f" + std::to_string(f);
}

void check_ensemble(const TreeEnsemble& m) {
  if (m.num_outputs > kMaxTreeOutputs)
    throw Error("model: " + std::to_string(m.num_outputs) + " outputs, above the limit of " +
                std::to_string(kMaxTreeOutputs));
  if (m.num_features > kMaxTreeFeatures)
    throw Error("model: " + std::to_string(m.num_features) + " features, above the limit of " +
                std::to_string(kMaxTreeFeatures));
  if (m.num_outputs < 1)
    throw Error("model: " + std::to_string(m.num_outputs) + " outputs (needs at least 1)");
  if (m.num_features < 0)
    throw Error("model: negative feature count " + std::to_string(m.num_features));
  if (!m.feature_names.empty() &&
      m.feature_names.size() != static_cast<std::size_t>(m.num_features))
    throw Error("model: " + std::to_string(m.feature_names.size()) + " feature names for " +
                std::to_string(m.num_features) + " features");
  if (m.base_score.size() != static_cast<std::size_t>(m.num_outputs))
    throw Error("model: " + std::to_string(m.base_score.size()) + " base scores for " +
                std::to_string(m.num_outputs) + " outputs");
  if (m.rounds < 0 || (m.rounds == 0) != m.trees.empty() ||
      (m.rounds > 0 && m.trees.size() % static_cast<std::size_t>(m.rounds) != 0))
    throw Error("model: " + std::to_string(m.trees.size()) + " trees do not make " +
                std::to_string(m.rounds) + " equal rounds");
  for (std::size_t t = 0; t < m.trees.size(); ++t) {
    const Tree& tree = m.trees[t];
    if (tree.round < 0 || tree.round >= m.rounds)
      bad_tree(t, "round " + std::to_string(tree.round) + " outside the model's " +
                      std::to_string(m.rounds));
    if (tree.output < 0 || tree.output >= m.num_outputs)
      bad_tree(t, "output " + std::to_string(tree.output) + " outside the model's " +
                      std::to_string(m.num_outputs));
    if (t > 0 && tree.round < m.trees[t - 1].round) bad_tree(t, "round goes back");
    if (tree.oblivious() != (m.dialect == TreeDialect::kCatBoost))
      bad_tree(t, tree.oblivious() ? "an oblivious tree in a non-CatBoost model"
                                   : "a binary tree in a CatBoost model");
    try {
      check_tree(m, tree);
    } catch (const Error& e) {
      bad_tree(t, e.what());
    }
  }
}

void check_tree(const TreeEnsemble& m, const Tree& tree) {
  if (tree.oblivious())
    check_oblivious(m, tree);
  else
    check_binary(m, tree);
}

int32_t leaf_of(const TreeEnsemble& model, const Tree& tree, const double* row) {
  if (tree.oblivious()) return oblivious_leaf(tree, row);
  int32_t i = 0;
  const bool xgb = model.dialect == TreeDialect::kXGBoost;
  while (true) {
    const TreeNode& node = tree.nodes[static_cast<std::size_t>(i)];
    if (node.is_leaf()) return i;
    const double x = row[node.feature];
    i = xgb ? next_xgboost(tree, node, x) : next_lightgbm(tree, node, x);
  }
}

double tree_output(const TreeEnsemble& model, const Tree& tree, const double* row) {
  const double v = leaf_value(tree, leaf_of(model, tree, row));
  if (model.dialect == TreeDialect::kXGBoost)  // float leaves times a float weight
    return static_cast<double>(static_cast<float>(v) * static_cast<float>(tree.weight));
  return v * tree.weight;
}

std::vector<double> predict_raw(const TreeEnsemble& model, const double* row, int32_t rounds) {
  const std::size_t k = static_cast<std::size_t>(model.num_outputs);
  const int32_t last = rounds < 0 ? model.rounds : std::min(rounds, model.rounds);
  std::vector<double> out(k, 0.0);
  if (model.dialect == TreeDialect::kXGBoost) {
    // XGBoost keeps predictions in float32 and adds each tree to them in order.
    std::vector<float> sum(k);
    for (std::size_t c = 0; c < k; ++c) sum[c] = static_cast<float>(model.base_score[c]);
    for (const Tree& tree : model.trees) {
      if (tree.round >= last) break;
      sum[static_cast<std::size_t>(tree.output)] +=
          static_cast<float>(tree_output(model, tree, row));
    }
    for (std::size_t c = 0; c < k; ++c) out[c] = sum[c];
    return out;
  }
  for (const Tree& tree : model.trees) {
    if (tree.round >= last) break;
    out[static_cast<std::size_t>(tree.output)] += tree_output(model, tree, row);
  }
  for (std::size_t c = 0; c < k; ++c) {
    if (model.average_output && last > 0) out[c] /= last;
    out[c] = out[c] * model.scale + model.base_score[c];
  }
  return out;
}

std::vector<double> transform_scores(const TreeEnsemble& model, const std::vector<double>& raw) {
  const bool f32 = model.dialect == TreeDialect::kXGBoost;  // XGBoost transforms in float32
  std::vector<double> out = raw;
  switch (model.link) {
    case TreeLink::kIdentity:
      break;
    case TreeLink::kSigmoid:
      // XGBoost's common::Sigmoid caps the exponent at 88.7 (expf overflows past it).
      for (double& v : out)
        v = f32 ? 1.0f / (std::exp(std::min(-static_cast<float>(v), 88.7f)) + 1.0f)
                : 1.0 / (1.0 + std::exp(-model.sigmoid_scale * v));
      break;
    case TreeLink::kExp:
      for (double& v : out) v = f32 ? std::exp(static_cast<float>(v)) : std::exp(v);
      break;
    case TreeLink::kLog1pExp:
      for (double& v : out) v = std::log1p(std::exp(v));
      break;
    case TreeLink::kHinge:
      for (double& v : out) v = v > 0 ? 1.0 : 0.0;
      break;
    case TreeLink::kSoftmax:
    case TreeLink::kSoftmaxArgmax: {
      if (out.empty()) break;
      if (model.link == TreeLink::kSoftmaxArgmax) {
        const auto best = std::max_element(out.begin(), out.end()) - out.begin();
        return {static_cast<double>(best)};
      }
      const double top = *std::max_element(out.begin(), out.end());
      if (f32) {  // common::Softmax: float exponentials, their sum in double
        double sum = 0;
        std::vector<float> e(out.size());
        for (std::size_t c = 0; c < out.size(); ++c)
          sum += e[c] = std::exp(static_cast<float>(out[c]) - static_cast<float>(top));
        for (std::size_t c = 0; c < out.size(); ++c) out[c] = e[c] / static_cast<float>(sum);
      } else {
        double sum = 0;
        for (double& v : out) sum += v = std::exp(v - top);
        for (double& v : out) v /= sum;
      }
      break;
    }
  }
  return out;
}

}  // namespace gradscope
