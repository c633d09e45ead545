// Hand-built tree ensembles and data for the tree-dynamics tests: small enough to know every
// number they should give, and passed through check_ensemble like a reader's.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "gradscope/core/trees/data.h"
#include "gradscope/core/trees/loss.h"
#include "gradscope/core/trees/model.h"

namespace gradscope::test {

/// A one-split tree: x[feature] < threshold goes left (XGBoost) / <= (LightGBM).
inline Tree stump(int32_t round, int32_t feature, double threshold, double left, double right,
                  double gain = 1, int32_t output = 0, double cover = 10) {
  Tree t;
  t.round = round;
  t.output = output;
  TreeNode root;
  root.left = 1;
  root.right = 2;
  root.feature = feature;
  root.threshold = threshold;
  root.gain = gain;
  root.cover = cover;
  TreeNode l, r;
  l.value = left;
  r.value = right;
  l.cover = r.cover = cover / 2;
  t.nodes = {root, l, r};
  return t;
}

/// A model of `trees` (rounds from their round fields), checked like a reader's output.
inline TreeEnsemble ensemble(std::vector<Tree> trees, int32_t features, int32_t outputs = 1,
                             TreeLink link = TreeLink::kIdentity,
                             const char* objective = "reg:squarederror",
                             TreeDialect dialect = TreeDialect::kXGBoost) {
  TreeEnsemble m;
  m.dialect = dialect;
  m.objective = objective;
  m.link = link;
  m.num_features = features;
  m.num_outputs = outputs;
  m.base_score.assign(static_cast<std::size_t>(outputs), 0.0);
  m.rounds = trees.empty() ? 0 : trees.back().round + 1;
  m.trees = std::move(trees);
  check_ensemble(m);
  return m;
}

/// A random binary tree of depth `depth` over `features` features (gains and covers set).
inline Tree random_tree(std::mt19937_64& gen, int32_t round, int32_t output, int32_t features,
                        int depth) {
  std::uniform_real_distribution<double> u(-1, 1);
  Tree t;
  t.round = round;
  t.output = output;
  // Breadth-first: node i's children are 2i + 1 and 2i + 2 (a full tree).
  const int32_t internal = (1 << depth) - 1, total = (1 << (depth + 1)) - 1;
  for (int32_t i = 0; i < total; ++i) {
    TreeNode n;
    n.cover = 1 + u(gen) * u(gen);
    if (i < internal) {
      n.left = 2 * i + 1;
      n.right = 2 * i + 2;
      n.feature = static_cast<int32_t>(gen() % static_cast<uint64_t>(features));
      n.threshold = u(gen);
      n.gain = 1 + u(gen);
      n.default_left = gen() % 2 == 0;
    } else {
      n.value = u(gen) * 0.3;
    }
    t.nodes.push_back(n);
  }
  return t;
}

/// `rows` rows of `cols` uniform features in [-1, 1], labels from `label(row)`.
template <class F>
TreeData random_data(std::mt19937_64& gen, std::size_t rows, std::size_t cols, F label) {
  std::uniform_real_distribution<double> u(-1, 1);
  TreeData d;
  d.rows = rows;
  d.cols = cols;
  for (std::size_t i = 0; i < rows * cols; ++i) d.x.push_back(u(gen));
  for (std::size_t i = 0; i < rows; ++i) d.y.push_back(label(d.row(i)));
  return d;
}

/// The metric of the first k rounds the slow way: predict_raw of the prefix for every row (the
/// reference the running sums of analyze_tree_dynamics must equal).
inline double prefix_loss(const TreeEnsemble& m, const TreeData& d, int32_t k) {
  const TreeLoss loss = tree_loss_of(m);
  double sum = 0;
  for (std::size_t i = 0; i < d.rows; ++i)
    sum += row_loss(m, loss, predict_raw(m, d.row(i), k).data(), d.y[i]);
  return finish_loss(loss, sum, d.rows);
}

}  // namespace gradscope::test
