// CatBoost's JSON model (save_model(format="json")): oblivious_trees[i] with splits (one per
// level, split_type "FloatFeature", float_feature_index, border), leaf_values (2^depth x the
// model's dimension, leaf-major) and leaf_weights; features_info.float_features maps a float
// feature to its column (flat_feature_index) and says how NaN is treated; scale_and_bias
// ([scale, [bias per dimension]]) maps the sum of leaf values to the raw score. Categorical
// features (one-hot and CTR splits) are refused: their hashing is not in the file.
#include <cmath>

#include "gradscope/core/error.h"
#include "gradscope/trees/read_model.h"
#include "internal/model_json.h"
#include "internal/objective_names.h"

namespace gradscope {
namespace {

using trees_internal::Field;
using trees_internal::index_or_string;
using trees_internal::numbers;

constexpr int kMaxDepth = 16;
constexpr std::size_t kMaxObliviousDepth = 24;  // as check_ensemble

struct FloatFeature {
  int32_t column = 0;
  bool nan_true = false;
};

std::vector<FloatFeature> float_features(const Field& info, TreeEnsemble& m) {
  std::vector<FloatFeature> out;
  if (info.has("categorical_features") && info.at("categorical_features").size() > 0)
    info.at("categorical_features")
        .fail("categorical features are not supported (their CTR hashing is not in the file)");
  if (!info.has("float_features")) return out;
  const Field list = info.at("float_features");
  std::vector<std::string> names;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const Field f = list.element(i);
    FloatFeature feature;
    feature.column = f.has("flat_feature_index") ? index_or_string(f.at("flat_feature_index"))
                                                 : static_cast<int32_t>(i);
    if (f.has("nan_value_treatment")) {
      const std::string t = f.at("nan_value_treatment").string();
      if (t != "AsIs" && t != "AsFalse" && t != "AsTrue")
        f.at("nan_value_treatment")
            .fail("must be AsIs, AsFalse or AsTrue, got \"" + t.substr(0, 16) + "\"");
      feature.nan_true = t == "AsTrue";
    }
    if (feature.column >= kMaxTreeFeatures)
      (f.has("flat_feature_index") ? f.at("flat_feature_index") : f)
          .fail("column " + std::to_string(feature.column) + ", above the limit of " +
                std::to_string(kMaxTreeFeatures) + " features");
    m.num_features = std::max(m.num_features, feature.column + 1);
    if (f.has("feature_id") && f.at("feature_id").json().is_string()) {
      names.resize(static_cast<std::size_t>(m.num_features));
      names[static_cast<std::size_t>(feature.column)] = f.at("feature_id").string();
    }
    out.push_back(feature);
  }
  // Names only when every column has one (a model of float features alone).
  if (names.size() == static_cast<std::size_t>(m.num_features) &&
      std::none_of(names.begin(), names.end(), [](const std::string& n) { return n.empty(); }))
    m.feature_names = names;
  return out;
}

TreeEnsemble parse(const std::string& text) {
  const trees_internal::Json doc = trees_internal::parse_model_json(text, kMaxDepth);
  const Field root(doc);
  TreeEnsemble m;
  m.dialect = TreeDialect::kCatBoost;
  m.booster = "oblivious";
  const std::vector<FloatFeature> features = float_features(root.at("features_info"), m);
  if (root.has("model_info") && root.at("model_info").has("params")) {
    const Field params = root.at("model_info").at("params");
    if (params.has("loss_function") && params.at("loss_function").has("type"))
      m.objective = params.at("loss_function").at("type").string();
  }
  m.link = trees_internal::catboost_link(m.objective);
  const Field trees = root.at("oblivious_trees");
  std::size_t dims = 0;
  std::vector<Tree> grown;
  for (std::size_t i = 0; i < trees.size(); ++i) {
    const Field t = trees.element(i);
    Tree tree;
    const Field splits = t.at("splits");
    if (splits.size() > kMaxObliviousDepth)
      splits.fail("depth " + std::to_string(splits.size()) + " above " +
                  std::to_string(kMaxObliviousDepth));
    for (std::size_t l = 0; l < splits.size(); ++l) {
      const Field s = splits.element(l);
      if (s.has("split_type") && s.at("split_type").string() != "FloatFeature")
        s.at("split_type")
            .fail("\"" + s.at("split_type").string().substr(0, 24) +
                  "\" splits are not supported (float features only)");
      const int32_t f = index_or_string(s.at("float_feature_index"));
      if (static_cast<std::size_t>(f) >= features.size())
        s.at("float_feature_index")
            .fail("float feature " + std::to_string(f) + " of " + std::to_string(features.size()));
      const double border = s.at("border").finite();
      tree.levels.push_back({features[static_cast<std::size_t>(f)].column,
                             static_cast<float>(border),
                             features[static_cast<std::size_t>(f)].nan_true});
    }
    const std::size_t leaves = std::size_t{1} << splits.size();
    const std::vector<double> values = numbers(t.at("leaf_values"));
    if (values.empty() || values.size() % leaves != 0)
      t.at("leaf_values")
          .fail(std::to_string(values.size()) + " values for " + std::to_string(leaves) +
                " leaves");
    const std::size_t d = static_cast<std::size_t>(trees_internal::checked_outputs(
        t.at("leaf_values"), static_cast<int64_t>(values.size() / leaves)));
    if (dims == 0) dims = d;
    if (d != dims)
      t.at("leaf_values")
          .fail(std::to_string(d) + " values per leaf, earlier trees " + std::to_string(dims));
    std::vector<double> weights;
    if (t.has("leaf_weights")) {
      weights = numbers(t.at("leaf_weights"));
      if (weights.size() != leaves)
        t.at("leaf_weights")
            .fail(std::to_string(weights.size()) + " weights for " + std::to_string(leaves) +
                  " leaves");
    }
    // One tree per dimension, sharing the splits (value of leaf k, dimension c: k * dims + c).
    for (std::size_t c = 0; c < d; ++c) {
      Tree part;
      part.levels = tree.levels;
      part.leaf_weights = weights;
      part.leaf_values.resize(leaves);
      for (std::size_t k = 0; k < leaves; ++k) part.leaf_values[k] = values[k * d + c];
      part.round = static_cast<int32_t>(i);
      part.output = static_cast<int32_t>(c);
      grown.push_back(std::move(part));
    }
  }
  m.num_outputs = static_cast<int32_t>(std::max<std::size_t>(dims, 1));
  m.rounds = static_cast<int32_t>(trees.size());
  m.trees = std::move(grown);
  m.base_score.assign(static_cast<std::size_t>(m.num_outputs), 0.0);
  if (root.has("scale_and_bias")) {
    const Field sb = root.at("scale_and_bias");
    if (sb.size() != 2) sb.fail("must be [scale, [bias, ...]]");
    m.scale = sb.element(0).finite();
    const Field bias = sb.element(1);
    const std::vector<double> b =
        bias.json().is_array() ? numbers(bias) : std::vector<double>{bias.finite()};
    if (b.size() != static_cast<std::size_t>(m.num_outputs))
      bias.fail(std::to_string(b.size()) + " biases for " + std::to_string(m.num_outputs) +
                " outputs");
    m.base_score = b;
  }
  return m;
}

}  // namespace

TreeEnsemble parse_catboost_json(const std::string& text, const std::string& name) {
  return trees_internal::with_model_context("catboost", name, [&] {
    TreeEnsemble m = parse(text);
    check_ensemble(m);
    return m;
  });
}

}  // namespace gradscope
