// A boosted tree ensemble as data, and its evaluation exactly as the library that wrote it
// evaluates it. Every reader (include/gradscope/trees/) produces this one model, so the round
// dynamics (dynamics.h) never know which library grew the trees.
//
//   gradscope::TreeEnsemble m = gradscope::read_tree_model("model.json");   // trees/read_model.h
//   std::vector<double> raw = gradscope::predict_raw(m, row);    // margins, one per output
//   std::vector<double> p = gradscope::transform_scores(m, raw); // what predict() returns
//   double t = gradscope::tree_output(m, m.trees[7], row);       // one tree's leaf value
//
// Each library decides splits, missing values and categories its own way and sums in its own
// precision (XGBoost in float32, LightGBM in double, CatBoost compares float32 features and
// sums doubles); the Dialect selects the library's rule, so predictions agree to rounding.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gradscope {

/// The most outputs (classes) a model may have. Readers refuse more before they size anything
/// by the count: a real model with more would grow 65536 trees a round.
constexpr int32_t kMaxTreeOutputs = 1 << 16;
/// The most features a model may split on: above the 2^24 hashed features of the largest
/// sparse models, and small enough that a table per feature stays a few hundred MB.
constexpr int32_t kMaxTreeFeatures = 1 << 26;

/// Whose decision rules, missing-value handling and arithmetic the ensemble follows.
enum class TreeDialect : uint8_t {
  kXGBoost,   ///< left when float(x) < split; NaN to the default child; float32 sums
  kLightGBM,  ///< left when x <= threshold; missing type None/Zero/NaN; double sums
  kCatBoost,  ///< oblivious trees; bit set when float(x) > border; double sums
};

/// "xgboost", "lightgbm", "catboost".
const char* dialect_name(TreeDialect dialect);

/// How raw scores become predictions (the objective's inverse link).
enum class TreeLink : uint8_t {
  kIdentity,       ///< regression, ranking, raw-margin objectives
  kSigmoid,        ///< 1 / (1 + exp(-sigmoid_scale x)) per output (binary, one-vs-all)
  kSoftmax,        ///< probabilities over the outputs
  kSoftmaxArgmax,  ///< the most likely output's index (XGBoost multi:softmax)
  kExp,            ///< exp(x): Poisson, gamma, Tweedie
  kLog1pExp,       ///< log(1 + exp(x)) (LightGBM cross_entropy_lambda)
  kHinge,          ///< 1 when x > 0, else 0 (XGBoost binary:hinge)
};

/// LightGBM's missing-value type of a numerical split (decision_type bits 2-3).
enum class MissingType : uint8_t { kNone, kZero, kNaN };

/// One node of a binary tree: an internal split or a leaf (left < 0).
struct TreeNode {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();

  int32_t left = -1, right = -1;            ///< child node indexes; -1 for a leaf
  int32_t feature = -1;                     ///< column of the split
  double threshold = 0;                     ///< numerical split value
  bool categorical = false;                 ///< split on a category set (categories_begin..end)
  bool default_left = false;                ///< where missing values go (XGBoost, LightGBM)
  MissingType missing = MissingType::kNaN;  ///< LightGBM only
  uint32_t categories_begin = 0, categories_end = 0;  ///< range in Tree::categories
  double value = 0;         ///< leaf value (already scaled by the library's shrinkage)
  double gain = kNone;      ///< split gain (loss reduction), NaN when the file has none
  double cover = kNone;     ///< training rows (LightGBM, CatBoost) or hessian sum (XGBoost)
  int32_t leaf_index = -1;  ///< the library's own leaf number (LightGBM leaf k is ~k)

  bool is_leaf() const { return left < 0; }
};

/// One level of an oblivious (CatBoost) tree: every node at this depth splits the same way.
struct ObliviousSplit {
  int32_t feature = -1;
  float border = 0;       ///< bit = float(x) > border
  bool nan_true = false;  ///< NaN sets the bit (CatBoost "AsTrue"); else it does not
};

/// One tree. Binary trees use `nodes` (root at 0); oblivious trees use `levels` and
/// `leaf_values` (2^depth leaves, leaf index = sum of bit_l << l).
struct Tree {
  std::vector<TreeNode> nodes;
  std::vector<int32_t> categories;  ///< sorted category ids of categorical splits
  std::vector<ObliviousSplit> levels;
  std::vector<double> leaf_values;   ///< oblivious trees: value per leaf
  std::vector<double> leaf_weights;  ///< oblivious trees: training weight per leaf (may be empty)
  int32_t round = 0;                 ///< boosting round that grew the tree (0-based)
  int32_t output = 0;                ///< class / output the tree adds to
  double weight = 1;                 ///< XGBoost DART weight_drop; 1 elsewhere

  bool oblivious() const { return !levels.empty() || !leaf_values.empty(); }
};

/// A whole model: trees, how to start and end the sum, and the feature names.
struct TreeEnsemble {
  TreeDialect dialect = TreeDialect::kXGBoost;
  std::string objective;  ///< as the file names it ("binary:logistic", ...)
  TreeLink link = TreeLink::kIdentity;
  double sigmoid_scale = 1;  ///< LightGBM "sigmoid:" parameter
  int32_t num_features = 0;
  int32_t num_outputs = 1;         ///< classes of a multiclass model, else 1
  int32_t rounds = 0;              ///< boosting rounds (trees / trees per round)
  std::vector<double> base_score;  ///< per output, in raw-score space (added first)
  double scale = 1;                ///< CatBoost: raw = scale * sum + base_score
  bool average_output = false;     ///< LightGBM random forest: sum / rounds
  bool boosted = true;             ///< false for random forests (trees do not build on each other)
  std::string booster = "gbtree";  ///< "gbtree", "dart", "gbdt", "rf", "oblivious"
  std::vector<std::string> feature_names;  ///< empty, or num_features names
  std::vector<Tree> trees;                 ///< in the order they were grown

  /// Trees per round (outputs x parallel trees).
  int32_t trees_per_round() const;
  /// The name of feature `f` ("f3" when the file has no names).
  std::string feature_name(int32_t f) const;
};

/// Throws Error naming the tree and node when the ensemble could not be evaluated safely:
/// a child out of range or reached twice (a cycle), a feature outside num_features, a
/// category range outside the tree, a leaf count that is not 2^depth, a non-finite leaf, a
/// tree whose round or output is out of range. Readers call it on every model they return.
void check_ensemble(const TreeEnsemble& model);

/// check_ensemble's checks of one tree (its round and output aside): Error "node 7: ..." or
/// "level 2: ..." so a reader can say where in its file the tree is.
void check_tree(const TreeEnsemble& model, const Tree& tree);

/// The node (binary tree) or leaf number (oblivious tree) `row` ends in; `row` has
/// num_features values, NaN for missing.
int32_t leaf_of(const TreeEnsemble& model, const Tree& tree, const double* row);

/// The tree's leaf value for `row`, times the DART weight (what the tree adds to the sum).
double tree_output(const TreeEnsemble& model, const Tree& tree, const double* row);

/// Raw scores (margins), one per output, summed over the first `rounds` rounds (all when
/// negative), in the library's precision and order.
std::vector<double> predict_raw(const TreeEnsemble& model, const double* row, int32_t rounds = -1);

/// What the library's predict() returns for these raw scores: probabilities, counts, classes.
std::vector<double> transform_scores(const TreeEnsemble& model, const std::vector<double>& raw);

}  // namespace gradscope
