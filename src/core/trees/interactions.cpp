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
  std::map<int32_t, int32_t> same_as;  // a near-duplicate feature -> the one it is merged into
  std::map<int32_t, double> weight;    // each feature's split gain (its count without gains)

  int32_t signal(int32_t f) const {
    const auto it = same_as.find(f);
    return it == same_as.end() ? f : it->second;
  }

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
    c.credit(c.signal(n.feature), n.gain, path);
    c.weight[n.feature] += std::isfinite(n.gain) ? n.gain : 1;
    path.push_back(c.signal(n.feature));
    stack.push_back({n.right, depth + 1});
    stack.push_back({n.left, depth + 1});
  }
}

void walk_oblivious(const Tree& tree, Collector& c) {
  std::vector<int32_t> above;
  for (const ObliviousSplit& l : tree.levels) {
    c.credit(c.signal(l.feature), InteractionPair::kNone, above);
    c.weight[l.feature] += 1;
    above.push_back(c.signal(l.feature));
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

namespace {

void walk(const TreeEnsemble& model, Collector& c) {
  c.pairs.clear();
  c.weight.clear();
  for (const Tree& tree : model.trees) {
    c.in_tree.clear();
    if (tree.oblivious())
      walk_oblivious(tree, c);
    else
      walk_binary(tree, c);
  }
}

double vif_of(double r) { return std::isnan(r) ? InteractionPair::kNone : 1.0 / (1.0 - r * r); }

// Near-duplicate features carry one signal: a tree splits on whichever of them is handy, and
// every partner of one appears as a partner of each (texture x area, x perimeter and x radius on
// breast_cancer, r > 0.99 among the last three, were three suggestions of one pair). The
// features of the best 4 x max_interactions pairs, most gain first, are each merged into the
// first earlier one whose columns' VIF exceeds interaction_vif; the pairs are then formed on
// what is left. Returns the merges (a merged into b) with their r and VIF.
std::vector<InteractionPair> merge_near_duplicates(const Collector& c, const TreeData& data,
                                                   const TreeThresholds& t,
                                                   std::map<int32_t, int32_t>& same_as) {
  std::vector<InteractionPair> ranked;
  for (const auto& [k, p] : c.pairs) ranked.push_back(p);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const InteractionPair& x, const InteractionPair& y) { return x.gain > y.gain; });
  std::vector<int32_t> features;
  const std::size_t top = std::min(ranked.size(), static_cast<std::size_t>(4 * std::max(0, t.max_interactions)));
  for (std::size_t i = 0; i < top; ++i)
    for (const int32_t f : {ranked[i].a, ranked[i].b})
      if (std::find(features.begin(), features.end(), f) == features.end()) features.push_back(f);
  std::stable_sort(features.begin(), features.end(), [&](int32_t x, int32_t y) {
    return c.weight.at(x) > c.weight.at(y) || (c.weight.at(x) == c.weight.at(y) && x < y);
  });
  std::vector<int32_t> kept;
  std::vector<InteractionPair> merged;
  for (const int32_t f : features) {
    bool duplicate = false;
    for (const int32_t g : kept) {
      const double r = column_correlation(data, f, g);
      if (!(vif_of(r) > t.interaction_vif)) continue;
      InteractionPair m;
      m.a = f;
      m.b = g;
      m.correlation = r;
      m.vif = vif_of(r);
      merged.push_back(m);
      same_as[f] = g;
      duplicate = true;
      break;
    }
    if (!duplicate) kept.push_back(f);
  }
  return merged;
}

}  // namespace

InteractionReport suggest_interactions(const TreeEnsemble& model, const TreeData* data,
                                       const TreeThresholds& t) {
  Collector c;
  c.by_gain = all_splits_have_gain(model);
  walk(model, c);
  InteractionReport r;
  if (data) {
    std::map<int32_t, int32_t> same_as;
    r.merged = merge_near_duplicates(c, *data, t, same_as);
    if (!same_as.empty()) {
      c.same_as = std::move(same_as);
      walk(model, c);  // the pairs again, on one feature per signal
    }
  }
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
      p.vif = vif_of(p.correlation);
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
