// LightGBM's dump_model() JSON (GBDT::DumpModel, Tree::ToJSON): the header fields of the text
// model, then tree_info[i].tree_structure, nested nodes with split_feature, threshold (a
// number, or "1||10||100" for a categorical split), decision_type ("<=" or "=="),
// default_left, missing_type and left_child / right_child; leaves with leaf_value. Older
// dumps (the v2 fixtures) have no "objective": their predictions are raw scores.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "gradscope/core/error.h"
#include "gradscope/trees/read_model.h"
#include "internal/model_json.h"
#include "internal/objective_names.h"

namespace gradscope {
namespace {

using trees_internal::Field;
using trees_internal::index_or_string;
using trees_internal::int32;

// Trees nest two levels per depth; LightGBM's depth is bounded by num_leaves, which real
// models keep in the hundreds. 8192 levels keeps a hostile file from costing more.
constexpr int kMaxDepth = 8192;

MissingType missing_of(const Field& f) {
  const std::string s = f.string();
  if (s == "None") return MissingType::kNone;
  if (s == "Zero") return MissingType::kZero;
  if (s == "NaN") return MissingType::kNaN;
  f.fail("must be \"None\", \"Zero\" or \"NaN\", got \"" + s.substr(0, 16) + "\"");
}

// "1||10||100": the categories that go left.
std::vector<int32_t> categories_of(const Field& f) {
  const std::string s = f.string();
  std::vector<int32_t> out;
  std::size_t i = 0;
  while (i <= s.size()) {
    std::size_t end = s.find("||", i);
    if (end == std::string::npos) end = s.size();
    const std::string part = s.substr(i, end - i);
    char* stop = nullptr;
    const long v = std::strtol(part.c_str(), &stop, 10);
    if (part.empty() || stop != part.c_str() + part.size() || v < 0 || v > INT32_MAX)
      f.fail("must be categories joined by \"||\", got \"" + s.substr(0, 32) + "\"");
    out.push_back(static_cast<int32_t>(v));
    i = end + 2;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// The nested structure as one node array, depth first with an explicit stack (no recursion
// on input depth).
Tree read_tree(const Field& structure, const TreeEnsemble& m) {
  Tree tree;
  struct Pending {
    Field field;
    int32_t parent;  // -1 for the root
    bool left;
  };
  std::vector<Pending> stack{{structure, -1, false}};
  while (!stack.empty()) {
    const Pending p = stack.back();
    stack.pop_back();
    const int32_t id = static_cast<int32_t>(tree.nodes.size());
    if (p.parent >= 0)
      (p.left ? tree.nodes[static_cast<std::size_t>(p.parent)].left
              : tree.nodes[static_cast<std::size_t>(p.parent)].right) = id;
    TreeNode node;
    const Field& j = p.field;
    if (!j.has("left_child")) {  // a leaf
      node.value = j.at("leaf_value").finite();
      if (j.has("leaf_index")) node.leaf_index = index_or_string(j.at("leaf_index"));
      if (j.has("leaf_count")) node.cover = static_cast<double>(j.at("leaf_count").count());
      tree.nodes.push_back(node);
      continue;
    }
    node.feature = index_or_string(j.at("split_feature"));
    if (node.feature >= m.num_features)
      j.at("split_feature")
          .fail("feature " + std::to_string(node.feature) + " outside the model's " +
                std::to_string(m.num_features) + " features");
    const std::string type = j.at("decision_type").string();
    if (type == "==") {
      node.categorical = true;
      const std::vector<int32_t> cats = categories_of(j.at("threshold"));
      node.categories_begin = static_cast<uint32_t>(tree.categories.size());
      tree.categories.insert(tree.categories.end(), cats.begin(), cats.end());
      node.categories_end = static_cast<uint32_t>(tree.categories.size());
    } else if (type == "<=") {
      node.threshold = j.at("threshold").finite();
    } else {
      j.at("decision_type").fail("must be \"<=\" or \"==\", got \"" + type.substr(0, 16) + "\"");
    }
    const Field default_left = j.at("default_left");
    if (!default_left.json().is_boolean())
      default_left.fail("must be true or false, got " + internal::shown(default_left.json()));
    node.default_left = default_left.json().get<bool>();
    node.missing = missing_of(j.at("missing_type"));
    if (j.has("split_gain")) node.gain = j.at("split_gain").finite();
    if (j.has("internal_count")) node.cover = static_cast<double>(j.at("internal_count").count());
    node.left = node.right = 0;  // set when the children are placed
    tree.nodes.push_back(node);
    stack.push_back({j.at("right_child"), id, false});
    stack.push_back({j.at("left_child"), id, true});
  }
  try {
    check_tree(m, tree);
  } catch (const Error& e) {
    structure.fail(e.what());
  }
  return tree;
}

TreeEnsemble parse(const std::string& text) {
  const trees_internal::Json doc = trees_internal::parse_model_json(text, kMaxDepth);
  const Field root(doc);
  TreeEnsemble m;
  m.dialect = TreeDialect::kLightGBM;
  m.num_outputs = trees_internal::checked_outputs(
      root.at("num_tree_per_iteration"), index_or_string(root.at("num_tree_per_iteration")));
  if (m.num_outputs < 1) root.at("num_tree_per_iteration").fail("must be at least 1");
  const int32_t max_feature = int32(root.at("max_feature_idx"));
  if (max_feature < -1 || max_feature == INT32_MAX) root.at("max_feature_idx").fail("out of range");
  m.num_features =
      trees_internal::checked_features(root.at("max_feature_idx"), int64_t{max_feature} + 1);
  if (root.has("feature_names")) {
    const Field names = root.at("feature_names");
    for (std::size_t i = 0; i < names.size(); ++i)
      m.feature_names.push_back(names.element(i).string());
    // Old dumps may list fewer names than features (the 1-leaf fixture); keep names only when
    // they name every feature.
    if (m.feature_names.size() != static_cast<std::size_t>(m.num_features)) m.feature_names.clear();
  }
  if (root.has("objective")) {
    const trees_internal::LightGBMObjective o =
        trees_internal::lightgbm_objective(root.at("objective").string());
    m.objective = o.name;
    m.link = o.link;
    m.sigmoid_scale = o.sigmoid;
  }
  if (root.has("average_output")) {
    const Field a = root.at("average_output");
    if (!a.json().is_boolean()) a.fail("must be true or false");
    m.average_output = a.json().get<bool>();
  }
  m.booster = m.average_output ? "rf" : "gbdt";
  m.boosted = !m.average_output;
  m.base_score.assign(static_cast<std::size_t>(m.num_outputs), 0.0);
  const Field info = root.at("tree_info");
  if (info.size() % static_cast<std::size_t>(m.num_outputs) != 0)
    info.fail(std::to_string(info.size()) + " trees are not whole rounds of " +
              std::to_string(m.num_outputs));
  m.rounds = static_cast<int32_t>(info.size() / static_cast<std::size_t>(m.num_outputs));
  for (std::size_t i = 0; i < info.size(); ++i) {
    Tree tree = read_tree(info.element(i).at("tree_structure"), m);
    tree.round = static_cast<int32_t>(i / static_cast<std::size_t>(m.num_outputs));
    tree.output = static_cast<int32_t>(i % static_cast<std::size_t>(m.num_outputs));
    m.trees.push_back(std::move(tree));
  }
  return m;
}

}  // namespace

TreeEnsemble parse_lightgbm_json(const std::string& text, const std::string& name) {
  return trees_internal::with_model_context("lightgbm", name, [&] {
    TreeEnsemble m = parse(text);
    check_ensemble(m);
    return m;
  });
}

}  // namespace gradscope
