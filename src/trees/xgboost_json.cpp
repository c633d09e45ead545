// XGBoost's JSON and UBJSON models (doc/model.schema in XGBoost 1.7 to 3.2):
// learner.learner_model_param (base_score, num_class, num_target, num_feature),
// learner.objective.name, and the gradient booster, "gbtree" with its trees or "dart" with a
// gbtree and one weight_drop per tree.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "gradscope/core/error.h"
#include "gradscope/trees/read_model.h"
#include "internal/model_json.h"
#include "internal/ubjson.h"

namespace gradscope {
namespace {

using trees_internal::checked_features;
using trees_internal::checked_outputs;
using trees_internal::Field;
using trees_internal::index_or_string;
using trees_internal::int32;
using trees_internal::number_or_string;
using trees_internal::numbers;

// The model nests 7 deep; a little room for what later versions add.
constexpr int kMaxDepth = 16;

struct Objective {
  TreeLink link = TreeLink::kIdentity;
  enum class Margin { kIdentity, kLogit, kLog } margin = Margin::kIdentity;
};

// The objective's prediction transform and how it turns base_score into a margin
// (ObjFunction::PredTransform and ProbToMargin in XGBoost's src/objective/).
Objective objective_of(const std::string& name) {
  using M = Objective::Margin;
  if (name == "binary:logistic" || name == "reg:logistic") return {TreeLink::kSigmoid, M::kLogit};
  // LogisticRaw::ProbToMargin returns base_score as it is: it is already a margin (measured
  // against XGBoost 3.2's own margins, tests/python/test_trees_readers_packages.py).
  if (name == "binary:logitraw") return {TreeLink::kIdentity, M::kIdentity};
  if (name == "multi:softprob") return {TreeLink::kSoftmax, M::kIdentity};
  if (name == "multi:softmax") return {TreeLink::kSoftmaxArgmax, M::kIdentity};
  if (name == "binary:hinge") return {TreeLink::kHinge, M::kIdentity};
  if (name == "count:poisson" || name == "reg:gamma" || name == "reg:tweedie" ||
      name == "survival:cox" || name == "survival:aft")
    return {TreeLink::kExp, M::kLog};
  return {TreeLink::kIdentity, M::kIdentity};
}

// base_score (a probability for logistic objectives, a mean for log-link ones) as the margin
// every prediction starts from, in float32 as XGBoost computes it.
double base_margin(double base_score, Objective::Margin margin, const Field& where) {
  const float p = static_cast<float>(base_score);
  switch (margin) {
    case Objective::Margin::kIdentity:
      return p;
    case Objective::Margin::kLogit:
      if (!(p > 0 && p < 1))
        where.fail("must be between 0 and 1 for a logistic objective, got " +
                   std::to_string(base_score));
      return -std::log(1.0f / p - 1.0f);
    case Objective::Margin::kLog:
      if (!(p > 0))
        where.fail("must be above 0 for a log-link objective, got " + std::to_string(base_score));
      return std::log(p);
  }
  return p;
}

// base_score as XGBoost writes it: one number ("5E-1", XGBoost 1.x and 2.x) for every output,
// or since 3.1 one per output in brackets ("[5.3E-1]", "[-1E-1,3E-2,7E-2]": the intercept of
// each class or target). One bracketed value is also every output's.
std::vector<double> base_scores(const Field& f, int32_t outputs) {
  const std::size_t n = static_cast<std::size_t>(outputs);
  if (!f.json().is_string() || f.json().get<std::string>().compare(0, 1, "[") != 0)
    return std::vector<double>(n, number_or_string(f));
  const std::string s = f.json().get<std::string>();
  if (s.size() < 3 || s.back() != ']')
    f.fail("must be a number or a bracketed list of numbers, got \"" + s.substr(0, 32) + "\"");
  std::vector<double> values;
  for (std::size_t at = 1; at < s.size();) {
    const std::size_t end = std::min(s.find(',', at), s.size() - 1);
    const std::string item = s.substr(at, end - at);
    char* stop = nullptr;
    errno = 0;
    const double v = std::strtod(item.c_str(), &stop);
    if (item.empty() || stop != item.c_str() + item.size() || errno == ERANGE || !std::isfinite(v))
      f.fail("value " + std::to_string(values.size()) + " must be a finite number, got \"" +
             item.substr(0, 32) + "\"");
    if (values.size() == n) f.fail("more values than the model's " + std::to_string(n) + " outputs");
    values.push_back(v);
    at = end + 1;
  }
  if (values.size() == 1) return std::vector<double>(n, values[0]);
  if (values.size() != n)
    f.fail(std::to_string(values.size()) + " values for the model's " + std::to_string(n) +
           " outputs");
  return values;
}

// XGBoost keeps every value in float32; the JSON text holds the shortest decimal that reads
// back as that float, UBJSON the float itself. Both become the same double here.
double f32(double v) { return static_cast<double>(static_cast<float>(v)); }

// One tree: nodes in the order the file lists them, then compacted to those reachable from
// the root (XGBoost leaves pruned nodes in the arrays, unreachable).
Tree read_tree(const Field& j, int32_t num_features) {
  const Field num_nodes = j.at("tree_param").at("num_nodes");
  const int32_t n = index_or_string(num_nodes);
  if (n < 1) num_nodes.fail("must be at least 1");
  const Field left = j.at("left_children"), right = j.at("right_children");
  const Field split = j.at("split_indices"), cond = j.at("split_conditions");
  const Field dleft = j.at("default_left");
  for (const Field* f : {&left, &right, &split, &cond, &dleft}) {
    const std::size_t size = trees_internal::array_size(*f);
    if (size != static_cast<std::size_t>(n))
      f->fail("has " + std::to_string(size) + " entries for " + std::to_string(n) + " nodes");
  }
  const std::vector<int32_t> lefts = trees_internal::int32_array(left);
  const std::vector<int32_t> rights = trees_internal::int32_array(right);
  const std::vector<int32_t> defaults = trees_internal::int32_array(dleft);
  const std::vector<int32_t> features = trees_internal::index_array(split);
  // Split conditions may be NaN (categorical splits) or infinite; leaf values must be finite.
  const std::vector<double> conditions = trees_internal::nonfinite_array(cond);
  std::vector<double> gain, cover;
  if (j.has("loss_changes")) gain = trees_internal::nonfinite_array(j.at("loss_changes"));
  if (j.has("sum_hessian")) cover = trees_internal::nonfinite_array(j.at("sum_hessian"));
  std::vector<int32_t> split_type;
  if (j.has("split_type")) {
    const Field st = j.at("split_type");
    const std::size_t size = trees_internal::array_size(st);
    if (size != static_cast<std::size_t>(n))
      st.fail("has " + std::to_string(size) + " entries for " + std::to_string(n) + " nodes");
    split_type = trees_internal::int32_array(st);
  }
  Tree tree;
  std::vector<TreeNode> nodes(static_cast<std::size_t>(n));
  for (int32_t i = 0; i < n; ++i) {
    const std::size_t u = static_cast<std::size_t>(i);
    TreeNode& node = nodes[u];
    node.left = lefts[u];
    node.right = rights[u];
    if (node.left < -1 || node.right < -1 || (node.left < 0) != (node.right < 0))
      trees_internal::fail_element(left, u,
                                   "node " + std::to_string(i) + " has children " +
                                       std::to_string(node.left) + " and " +
                                       std::to_string(node.right));
    node.default_left = defaults[u] != 0;
    if (node.is_leaf()) {
      if (!std::isfinite(conditions[u]))
        trees_internal::fail_element(cond, u,
                                     "leaf value of node " + std::to_string(i) + " is not finite");
      node.value = f32(conditions[u]);
    } else {
      node.feature = features[u];
      node.threshold = f32(conditions[u]);
      if (u < gain.size()) node.gain = f32(gain[u]);
    }
    if (u < cover.size()) node.cover = f32(cover[u]);
    if (!split_type.empty() && split_type[u] == 1 && !node.is_leaf()) node.categorical = true;
  }
  // Categorical splits: categories_nodes[k] owns categories[segments[k] .. + sizes[k]].
  std::vector<std::vector<int32_t>> node_categories(nodes.size());
  if (j.has("categories_nodes")) {
    const Field cn = j.at("categories_nodes"), seg = j.at("categories_segments"),
                sz = j.at("categories_sizes");
    const Field cats = j.at("categories");
    if (seg.size() != cn.size() || sz.size() != cn.size())
      cn.fail(std::to_string(cn.size()) + " nodes, " + std::to_string(seg.size()) +
              " segments and " + std::to_string(sz.size()) + " sizes");
    for (std::size_t k = 0; k < cn.size(); ++k) {
      const int32_t node = index_or_string(cn.element(k));
      if (node >= n)
        cn.element(k).fail("node " + std::to_string(node) + " outside the tree's " +
                           std::to_string(n));
      const int64_t begin = seg.element(k).count(), size = sz.element(k).count();
      if (begin > static_cast<int64_t>(cats.size()) ||
          size > static_cast<int64_t>(cats.size()) - begin)
        seg.element(k).fail("categories " + std::to_string(begin) + " + " + std::to_string(size) +
                            " past the " + std::to_string(cats.size()) + " listed");
      for (int64_t c = begin; c < begin + size; ++c)
        node_categories[static_cast<std::size_t>(node)].push_back(
            index_or_string(cats.element(static_cast<std::size_t>(c))));
    }
  }
  // Compact: breadth-first from the root, each node once.
  std::vector<int32_t> new_id(nodes.size(), -1);
  std::vector<int32_t> order{0};
  new_id[0] = 0;
  for (std::size_t k = 0; k < order.size(); ++k) {
    const TreeNode& node = nodes[static_cast<std::size_t>(order[k])];
    if (node.is_leaf()) continue;
    for (const int32_t child : {node.left, node.right}) {
      if (child >= n)
        trees_internal::fail_element(left, static_cast<std::size_t>(order[k]),
                                     "child " + std::to_string(child) + " outside the tree's " +
                                         std::to_string(n) + " nodes");
      if (new_id[static_cast<std::size_t>(child)] >= 0)
        trees_internal::fail_element(
            left, static_cast<std::size_t>(order[k]),
            "child " + std::to_string(child) + " is reached twice (not a tree)");
      new_id[static_cast<std::size_t>(child)] = static_cast<int32_t>(order.size());
      order.push_back(child);
    }
  }
  tree.nodes.reserve(order.size());
  for (const int32_t old : order) {
    TreeNode node = nodes[static_cast<std::size_t>(old)];
    if (!node.is_leaf()) {
      node.left = new_id[static_cast<std::size_t>(node.left)];
      node.right = new_id[static_cast<std::size_t>(node.right)];
    }
    if (node.categorical) {
      std::vector<int32_t>& cats = node_categories[static_cast<std::size_t>(old)];
      std::sort(cats.begin(), cats.end());
      cats.erase(std::unique(cats.begin(), cats.end()), cats.end());
      node.categories_begin = static_cast<uint32_t>(tree.categories.size());
      tree.categories.insert(tree.categories.end(), cats.begin(), cats.end());
      node.categories_end = static_cast<uint32_t>(tree.categories.size());
    }
    if (!node.is_leaf() && node.feature >= num_features)
      trees_internal::fail_element(split, static_cast<std::size_t>(old),
                                   "feature " + std::to_string(node.feature) +
                                       " outside the model's " + std::to_string(num_features) +
                                       " features");
    tree.nodes.push_back(node);
  }
  return tree;
}

// The model from its document, the same whether it was JSON or UBJSON.
TreeEnsemble parse(const trees_internal::Json& doc) {
  const Field learner = Field(doc).at("learner");
  const Field param = learner.at("learner_model_param");
  TreeEnsemble m;
  m.dialect = TreeDialect::kXGBoost;
  m.objective = learner.at("objective").at("name").string();
  const Objective objective = objective_of(m.objective);
  m.link = objective.link;
  m.num_features =
      checked_features(param.at("num_feature"), index_or_string(param.at("num_feature")));
  const int32_t num_class =
      checked_outputs(param.at("num_class"), index_or_string(param.at("num_class")));
  const int32_t num_target =
      param.has("num_target")
          ? checked_outputs(param.at("num_target"), index_or_string(param.at("num_target")))
          : 1;
  m.num_outputs = std::max({num_class, num_target, 1});
  const Field base = param.at("base_score");
  for (const double b : base_scores(base, m.num_outputs))
    m.base_score.push_back(base_margin(b, objective.margin, base));
  if (learner.has("feature_names")) {
    const Field names = learner.at("feature_names");
    for (std::size_t i = 0; i < names.size(); ++i)
      m.feature_names.push_back(names.element(i).string());
    if (!m.feature_names.empty() &&
        m.feature_names.size() != static_cast<std::size_t>(m.num_features))
      names.fail(std::to_string(m.feature_names.size()) + " names for " +
                 std::to_string(m.num_features) + " features");
  }

  const Field booster = learner.at("gradient_booster");
  m.booster = booster.at("name").string();
  std::vector<double> weights;
  if (m.booster == "dart") {
    weights = numbers(booster.at("weight_drop"));
  } else if (m.booster != "gbtree") {
    booster.at("name").fail("\"" + m.booster.substr(0, 32) +
                            "\" has no trees (gradscope reads gbtree and dart)");
  }
  const Field model = m.booster == "dart" ? booster.at("gbtree").at("model") : booster.at("model");
  const Field trees = model.at("trees"), info = model.at("tree_info");
  const int32_t parallel = index_or_string(model.at("gbtree_model_param").at("num_parallel_tree"));
  if (parallel < 1)
    model.at("gbtree_model_param").at("num_parallel_tree").fail("must be at least 1");
  const std::size_t count = trees.size();
  const Field num_trees = model.at("gbtree_model_param").at("num_trees");
  if (static_cast<std::size_t>(index_or_string(num_trees)) != count)
    num_trees.fail("says " + std::to_string(index_or_string(num_trees)) +
                   " trees, the model holds " + std::to_string(count));
  if (info.size() != count)
    info.fail("has " + std::to_string(info.size()) + " entries for " + std::to_string(count) +
              " trees");
  if (!weights.empty() && weights.size() != count)
    learner.at("gradient_booster")
        .at("weight_drop")
        .fail("has " + std::to_string(weights.size()) + " weights for " + std::to_string(count) +
              " trees");
  const std::size_t per_round =
      static_cast<std::size_t>(m.num_outputs) * static_cast<std::size_t>(parallel);
  if (count % per_round != 0)
    trees.fail(std::to_string(count) + " trees are not whole rounds of " +
               std::to_string(per_round));
  m.rounds = static_cast<int32_t>(count / per_round);
  m.boosted = m.rounds > 1 || parallel == 1;
  m.trees.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    Tree tree = read_tree(trees.element(i), m.num_features);
    tree.round = static_cast<int32_t>(i / per_round);
    tree.output = index_or_string(info.element(i));
    if (tree.output >= m.num_outputs)
      info.element(i).fail("output " + std::to_string(tree.output) + " outside the model's " +
                           std::to_string(m.num_outputs));
    if (!weights.empty()) tree.weight = f32(weights[i]);
    m.trees.push_back(std::move(tree));
  }
  return m;
}

}  // namespace

TreeEnsemble parse_xgboost_json(const std::string& text, const std::string& name) {
  return trees_internal::with_model_context("xgboost", name, [&] {
    TreeEnsemble m = parse(trees_internal::parse_xgboost_model_json(text, kMaxDepth));
    check_ensemble(m);
    return m;
  });
}

TreeEnsemble parse_xgboost_ubjson(const std::string& bytes, const std::string& name) {
  return trees_internal::with_model_context("xgboost", name, [&] {
    // Per node, XGBoost also keeps its parent and its weight before shrinkage (base_weights):
    // the reader needs neither.
    static const std::vector<std::string> kUnread = {"parents", "base_weights"};
    // The per-node arrays are read as packed numbers: one value each instead of one a node.
    static const std::vector<std::string> kPacked = {
        "left_children", "right_children", "split_indices", "split_conditions",
        "default_left",  "split_type",     "loss_changes",  "sum_hessian"};
    TreeEnsemble m = parse(trees_internal::parse_ubjson(bytes, kMaxDepth, kUnread, kPacked));
    check_ensemble(m);
    return m;
  });
}

}  // namespace gradscope
