// LightGBM's text model (GBDT::SaveModelToString, Tree::ToString): "key=value" header lines,
// one block per tree from "Tree=<i>", "end of trees", then feature importances and
// "parameters:" with lines like "[boosting: dart]". Within a tree, internal node i and leaf k
// are separate arrays; a child c >= 0 is internal node c, c < 0 is leaf ~c. decision_type
// packs categorical (bit 0), default left (bit 1) and the missing type (bits 2-3).
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string_view>

#include "gradscope/core/error.h"
#include "gradscope/trees/read_model.h"
#include "internal/model_json.h"
#include "internal/objective_names.h"

namespace gradscope {
namespace {

struct Line {
  std::string_view key, value;
  std::size_t number = 0;  // 1-based
};

[[noreturn]] void fail_at(std::size_t line, const std::string& what) {
  throw Error("line " + std::to_string(line) + ": " + what);
}

std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && s[i] == ' ') ++i;
    const std::size_t start = i;
    while (i < s.size() && s[i] != ' ') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

// A number as LightGBM prints it (%.17g, or inf/nan for a diverged model).
double to_double(std::string_view token, const Line& line) {
  const std::string s(token);
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size())
    fail_at(line.number, std::string(line.key) + ": \"" + s.substr(0, 32) + "\" is not a number");
  return v;
}

int64_t to_int(std::string_view token, const Line& line, int64_t lo, int64_t hi) {
  const std::string s(token);
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || end != s.c_str() + s.size() || errno == ERANGE || v < lo || v > hi)
    fail_at(line.number, std::string(line.key) + ": \"" + s.substr(0, 32) +
                             "\" is not an integer from " + std::to_string(lo) + " to " +
                             std::to_string(hi));
  return v;
}

std::vector<double> doubles(const Line& line, std::size_t count) {
  const auto t = tokens(line.value);
  if (t.size() != count)
    fail_at(line.number, std::string(line.key) + ": " + std::to_string(t.size()) +
                             " values, expected " + std::to_string(count));
  std::vector<double> out;
  out.reserve(count);
  for (std::string_view s : t) out.push_back(to_double(s, line));
  return out;
}

std::vector<int64_t> ints(const Line& line, std::size_t count, int64_t lo, int64_t hi) {
  const auto t = tokens(line.value);
  if (t.size() != count)
    fail_at(line.number, std::string(line.key) + ": " + std::to_string(t.size()) +
                             " values, expected " + std::to_string(count));
  std::vector<int64_t> out;
  out.reserve(count);
  for (std::string_view s : t) out.push_back(to_int(s, line, lo, hi));
  return out;
}

// The lines of one section ("key=value"), by key; a repeated key is an error.
using Section = std::map<std::string_view, Line>;

void add(Section& section, const Line& line) {
  if (!section.emplace(line.key, line).second)
    fail_at(line.number, "\"" + std::string(line.key).substr(0, 32) + "\" given twice");
}

const Line* find(const Section& s, std::string_view key) {
  const auto it = s.find(key);
  return it == s.end() ? nullptr : &it->second;
}

const Line& need(const Section& s, std::string_view key, std::size_t where,
                 const std::string& what) {
  const Line* l = find(s, key);
  if (!l) fail_at(where, what + ": missing " + std::string(key));
  return *l;
}

// Tree::Tree(const char*) in LightGBM's src/io/tree.cpp, into one node array: internal nodes
// first, then leaves.
Tree read_tree(const Section& s, std::size_t start, const TreeEnsemble& m, std::size_t index) {
  const int32_t num_features = m.num_features;
  const std::string what = "tree " + std::to_string(index);
  const Line& nl = need(s, "num_leaves", start, what);
  const int64_t leaves = to_int(nl.value, nl, 1, 1 << 30);
  const std::size_t inner = static_cast<std::size_t>(leaves - 1);
  const Line* linear = find(s, "is_linear");
  if (linear && to_int(linear->value, *linear, 0, 1) == 1)
    fail_at(linear->number, what + ": linear trees (is_linear=1) are not supported");
  // The leaf values are read before the nodes are sized: num_leaves alone must not decide
  // what is allocated.
  const std::vector<double> values =
      doubles(need(s, "leaf_value", start, what), static_cast<std::size_t>(leaves));
  Tree tree;
  tree.nodes.resize(inner + static_cast<std::size_t>(leaves));
  const Line* shrink = find(s, "shrinkage");
  if (shrink) to_double(shrink->value, *shrink);  // a number; leaf values already carry it
  for (std::size_t k = 0; k < static_cast<std::size_t>(leaves); ++k) {
    TreeNode& leaf = tree.nodes[inner + k];
    leaf.value = values[k];
    leaf.leaf_index = static_cast<int32_t>(k);
  }
  // LightGBM reads nothing but leaf_value for a one-leaf tree (Tree::Tree(const char*)), and
  // such trees are written with the other arrays empty ("leaf_count=").
  const Line* count = find(s, "leaf_count");
  if (count && !(inner == 0 && tokens(count->value).empty())) {
    const auto c = ints(*count, static_cast<std::size_t>(leaves), 0, INT64_MAX);
    for (std::size_t k = 0; k < c.size(); ++k)
      tree.nodes[inner + k].cover = static_cast<double>(c[k]);
  }
  if (inner == 0) return tree;

  const Line& fl = need(s, "split_feature", start, what);
  const auto features = ints(fl, inner, 0, INT32_MAX);
  const auto thresholds = doubles(need(s, "threshold", start, what), inner);
  const auto types = ints(need(s, "decision_type", start, what), inner, 0, 255);
  const Line& ll = need(s, "left_child", start, what);
  const Line& rl = need(s, "right_child", start, what);
  const auto lefts = ints(ll, inner, -leaves, static_cast<int64_t>(inner) - 1);
  const auto rights = ints(rl, inner, -leaves, static_cast<int64_t>(inner) - 1);
  std::vector<double> gains, counts;
  if (const Line* g = find(s, "split_gain")) gains = doubles(*g, inner);
  if (const Line* c = find(s, "internal_count")) counts = doubles(*c, inner);
  // Categorical splits: threshold i is an index into cat_boundaries, whose consecutive
  // entries bound that split's bitset words in cat_threshold (bit b of word w: category 32w+b).
  std::vector<int64_t> bounds, words;
  const Line* cat_line = find(s, "num_cat");
  const int64_t num_cat = cat_line ? to_int(cat_line->value, *cat_line, 0, INT32_MAX) : 0;
  if (num_cat > 0) {
    const Line& bl = need(s, "cat_boundaries", start, what);
    bounds = ints(bl, static_cast<std::size_t>(num_cat) + 1, 0, INT32_MAX);
    const Line& wl = need(s, "cat_threshold", start, what);
    words = ints(wl, static_cast<std::size_t>(bounds.back()), 0, UINT32_MAX);
    for (std::size_t i = 1; i < bounds.size(); ++i)
      if (bounds[i] < bounds[i - 1]) fail_at(bl.number, what + ": cat_boundaries decrease");
  }
  std::vector<std::pair<int64_t, int64_t>> set_range(bounds.empty() ? 0 : bounds.size() - 1,
                                                     {-1, -1});
  auto child = [&](int64_t c) {
    return static_cast<int32_t>(c >= 0 ? c : static_cast<int64_t>(inner) + ~c);
  };
  for (std::size_t i = 0; i < inner; ++i) {
    TreeNode& node = tree.nodes[i];
    node.feature = static_cast<int32_t>(features[i]);
    if (node.feature >= num_features)
      fail_at(fl.number, what + ": split feature " + std::to_string(node.feature) +
                             " outside the model's " + std::to_string(num_features) + " features");
    node.left = child(lefts[i]);
    node.right = child(rights[i]);
    node.categorical = (types[i] & 1) != 0;
    node.default_left = (types[i] & 2) != 0;
    node.missing = static_cast<MissingType>(std::min<int64_t>((types[i] >> 2) & 3, 2));
    node.threshold = thresholds[i];
    if (i < gains.size()) node.gain = gains[i];
    if (i < counts.size()) node.cover = counts[i];
    if (node.categorical) {
      const double t = thresholds[i];
      if (!(t >= 0 && t < static_cast<double>(num_cat)) || t != std::floor(t))
        fail_at(need(s, "threshold", start, what).number,
                what + ": categorical split " + std::to_string(i) + " names category set " +
                    std::to_string(t) + " of " + std::to_string(num_cat));
      // Each set is listed once, however many splits use it, so the categories kept stay
      // within 32 per word of cat_threshold.
      const std::size_t set = static_cast<std::size_t>(t);
      if (set_range[set].first < 0) {
        set_range[set].first = static_cast<int64_t>(tree.categories.size());
        for (int64_t w = bounds[set]; w < bounds[set + 1]; ++w)
          for (int b = 0; b < 32; ++b)
            if ((words[static_cast<std::size_t>(w)] >> b) & 1)
              tree.categories.push_back(static_cast<int32_t>(32 * (w - bounds[set]) + b));
        set_range[set].second = static_cast<int64_t>(tree.categories.size());
      }
      node.categories_begin = static_cast<uint32_t>(set_range[set].first);
      node.categories_end = static_cast<uint32_t>(set_range[set].second);
    }
  }
  try {
    check_tree(m, tree);
  } catch (const Error& e) {
    fail_at(ll.number, what + ": " + e.what());
  }
  return tree;
}

TreeEnsemble parse(const std::string& text) {
  // Split into sections: the header, each tree, the rest (parameters).
  Section header;
  std::vector<std::pair<std::size_t, Section>> trees;
  Section* current = &header;
  bool ended = false, average_output = false;
  std::string boosting = "gbdt";
  std::size_t number = 0, start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string_view raw(text.data() + start, end - start);
    start = end + 1;
    ++number;
    if (!raw.empty() && raw.back() == '\r') raw.remove_suffix(1);
    if (ended) {
      const std::string_view key = "[boosting: ";
      if (raw.substr(0, key.size()) == key && raw.size() > key.size() && raw.back() == ']')
        boosting = std::string(raw.substr(key.size(), raw.size() - key.size() - 1));
      continue;
    }
    if (raw == "end of trees") {
      ended = true;
      continue;
    }
    if (number == 1) {
      if (raw != "tree") fail_at(1, "not a LightGBM text model (the first line is not \"tree\")");
      continue;
    }
    if (raw.empty()) continue;
    if (raw == "average_output") {
      average_output = true;
      continue;
    }
    const auto eq = raw.find('=');
    if (eq == std::string_view::npos) fail_at(number, "expected key=value");
    const Line line{raw.substr(0, eq), raw.substr(eq + 1), number};
    if (line.key == "Tree") {
      trees.emplace_back(number, Section{});
      current = &trees.back().second;
    }
    add(*current, line);
  }
  if (!ended) fail_at(number, "the file ends before \"end of trees\" (truncated?)");

  TreeEnsemble m;
  m.dialect = TreeDialect::kLightGBM;
  const Line& version = need(header, "version", 1, "header");
  if (version.value != "v2" && version.value != "v3" && version.value != "v4")
    fail_at(version.number, "version \"" + std::string(version.value).substr(0, 16) +
                                "\" (gradscope reads v2 to v4)");
  const Line& per_iter = need(header, "num_tree_per_iteration", 1, "header");
  m.num_outputs = static_cast<int32_t>(to_int(per_iter.value, per_iter, 1, kMaxTreeOutputs));
  const Line& max_feature = need(header, "max_feature_idx", 1, "header");
  m.num_features =
      static_cast<int32_t>(to_int(max_feature.value, max_feature, -1, kMaxTreeFeatures - 1) + 1);
  if (const Line* names = find(header, "feature_names")) {
    for (std::string_view t : tokens(names->value)) m.feature_names.emplace_back(t);
    if (m.feature_names.size() != static_cast<std::size_t>(m.num_features))
      fail_at(names->number, std::to_string(m.feature_names.size()) + " feature names for " +
                                 std::to_string(m.num_features) + " features");
  }
  if (const Line* objective = find(header, "objective")) {
    const trees_internal::LightGBMObjective o =
        trees_internal::lightgbm_objective(objective->value);
    m.objective = o.name;
    m.link = o.link;
    m.sigmoid_scale = o.sigmoid;
  }
  m.booster = average_output ? "rf" : boosting;
  m.average_output = average_output;
  m.boosted = !average_output && boosting != "rf";
  m.base_score.assign(static_cast<std::size_t>(m.num_outputs), 0.0);
  if (trees.size() % static_cast<std::size_t>(m.num_outputs) != 0)
    fail_at(number, std::to_string(trees.size()) + " trees are not whole rounds of " +
                        std::to_string(m.num_outputs));
  m.rounds = static_cast<int32_t>(trees.size() / static_cast<std::size_t>(m.num_outputs));
  m.trees.reserve(trees.size());
  for (std::size_t i = 0; i < trees.size(); ++i) {
    Tree tree = read_tree(trees[i].second, trees[i].first, m, i);
    tree.round = static_cast<int32_t>(i / static_cast<std::size_t>(m.num_outputs));
    tree.output = static_cast<int32_t>(i % static_cast<std::size_t>(m.num_outputs));
    m.trees.push_back(std::move(tree));
  }
  return m;
}

}  // namespace

TreeEnsemble parse_lightgbm_text(const std::string& text, const std::string& name) {
  return trees_internal::with_model_context("lightgbm", name, [&] {
    TreeEnsemble m = parse(text);
    check_ensemble(m);
    return m;
  });
}

}  // namespace gradscope
