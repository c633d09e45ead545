#include "gradscope/core/trees/interactions.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

namespace gradscope {
namespace {

using Key = std::pair<int32_t, int32_t>;

struct Collector {
  bool by_gain = true;
  std::map<Key, InteractionPair> pairs;
  std::set<Key> in_tree;

  // The lower split on `lower` credits each distinct feature split on in `above` (its
  // ancestors, the root first) once, looking at the last kInteractionReach of them only: a
  // short list, searched in place.
  void credit(int32_t lower, double gain, const std::vector<int32_t>& above) {
    seen.clear();
    const std::size_t from = above.size() - std::min(above.size(), static_cast<std::size_t>(kInteractionReach));
    for (std::size_t i = from; i < above.size(); ++i) {
      const int32_t upper = above[i];
      if (upper == lower || std::find(seen.begin(), seen.end(), upper) != seen.end()) continue;
      seen.push_back(upper);
      const Key k{std::min(lower, upper), std::max(lower, upper)};
      InteractionPair& p = pairs[k];
      p.a = k.first;
      p.b = k.second;
      p.gain += std::isfinite(gain) ? gain : 0;
      ++p.count;
      if (in_tree.insert(k).second) ++p.trees;
    }
  }
  std::vector<int32_t> seen;
};

void walk_binary(const Tree& tree, Collector& c) {
  // Depth-first with the features on the path from the root; each frame is (node, depth).
  std::vector<int32_t> path;
  std::vector<std::pair<int32_t, std::size_t>> stack{{0, 0}};
  while (!stack.empty()) {
    const auto [i, depth] = stack.back();
    stack.pop_back();
    const TreeNode& n = tree.nodes[static_cast<std::size_t>(i)];
    if (n.is_leaf()) continue;
    path.resize(depth);
    c.credit(n.feature, n.gain, path);
    path.push_back(n.feature);
    stack.push_back({n.right, depth + 1});
    stack.push_back({n.left, depth + 1});
  }
}

void walk_oblivious(const Tree& tree, Collector& c) {
  std::vector<int32_t> above;
  for (const ObliviousSplit& l : tree.levels) {
    c.credit(l.feature, InteractionPair::kNone, above);
    above.push_back(l.feature);
  }
}

bool all_splits_have_gain(const TreeEnsemble& model) {
  bool any = false;
  for (const Tree& t : model.trees) {
    if (t.oblivious()) return false;  // CatBoost files hold no split gains
    for (const TreeNode& n : t.nodes) {
      if (n.is_leaf()) continue;
      any = true;
      if (!std::isfinite(n.gain)) return false;
    }
  }
  return any;
}

}  // namespace

double column_correlation(const TreeData& d, int32_t a, int32_t b) {
  const std::size_t ca = static_cast<std::size_t>(a), cb = static_cast<std::size_t>(b);
  double n = 0, ma = 0, mb = 0;
  for (std::size_t i = 0; i < d.rows; ++i) {
    const double x = d.row(i)[ca], y = d.row(i)[cb];
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    ++n;
    ma += (x - ma) / n;  // running means: no overflow on large columns
    mb += (y - mb) / n;
  }
  if (n < 2) return InteractionPair::kNone;
  double sab = 0, saa = 0, sbb = 0;
  for (std::size_t i = 0; i < d.rows; ++i) {
    const double x = d.row(i)[ca], y = d.row(i)[cb];
    if (!std::isfinite(x) || !std::isfinite(y)) continue;
    sab += (x - ma) * (y - mb);
    saa += (x - ma) * (x - ma);
    sbb += (y - mb) * (y - mb);
  }
  if (!(saa > 0) || !(sbb > 0)) return InteractionPair::kNone;
  return std::clamp(sab / std::sqrt(saa * sbb), -1.0, 1.0);
}

InteractionReport suggest_interactions(const TreeEnsemble& model, const TreeData* data,
                                       const TreeThresholds& t) {
  Collector c;
  c.by_gain = all_splits_have_gain(model);
  for (const Tree& tree : model.trees) {
    c.in_tree.clear();
    if (tree.oblivious())
      walk_oblivious(tree, c);
    else
      walk_binary(tree, c);
  }
  InteractionReport r;
  r.by_gain = c.by_gain;
  r.filtered = data != nullptr;
  r.pairs = static_cast<int64_t>(c.pairs.size());
  std::vector<InteractionPair> ranked;
  double total = 0;
  for (auto& [k, p] : c.pairs) {
    if (!c.by_gain) p.gain = static_cast<double>(p.count);
    total += p.gain;
    ranked.push_back(p);
  }
  std::stable_sort(
      ranked.begin(), ranked.end(),
      [](const InteractionPair& x, const InteractionPair& y) { return x.gain > y.gain; });
  for (InteractionPair& p : ranked) {
    if (static_cast<int>(r.kept.size()) >= t.max_interactions) break;
    p.share = total > 0 ? p.gain / total : 0;
    if (data) {
      p.correlation = column_correlation(*data, p.a, p.b);
      // |r| = 1 gives 1 / 0 = +Inf: perfectly collinear, dropped.
      p.vif = std::isnan(p.correlation) ? InteractionPair::kNone
                                        : 1.0 / (1.0 - p.correlation * p.correlation);
      if (p.vif > t.interaction_vif) {
        r.dropped.push_back(p);
        continue;
      }
    }
    r.kept.push_back(p);
  }
  return r;
}

}  // namespace gradscope
