// The XGBoost JSON reader against live XGBoost (Debian's libxgboost-dev): models trained here
// through the C API on real data, saved with save_json and read back by parse_xgboost_json,
// must predict what XGBoost's predict() returns for every row, as margins and transformed,
// and after every prefix of rounds; saved as UBJSON they must read to the same model. One case per
// thing a reader can get wrong: the objective's link and base score, multiclass outputs, DART
// weights, missing values, category sets, parallel trees.
#include <gtest/gtest.h>

#include <map>
#include <random>

#include "gradscope/core/trees/data.h"
#include "gradscope/trees/data_files.h"
#include "gradscope/trees/read_model.h"
#include "gradscope/trees/xgboost_api.h"
#include "tree_test_util.h"

namespace gradscope::test {
namespace {

struct Case {
  std::string name, data;  // data: a file under the data directory
  std::map<std::string, std::string> params;
  int rounds = 20;
  double missing = 0;        // fraction of cells replaced by NaN
  bool categorical = false;  // every column a category (digits' pixel values)
};

std::ostream& operator<<(std::ostream& os, const Case& c) { return os << c.name; }

// Cells replaced by NaN at random (fixed seed), so the trees learn default directions.
void knock_out(TreeData& d, double fraction) {
  std::mt19937_64 gen(11);
  for (double& v : d.x)
    if (static_cast<double>(gen() % 1000) < fraction * 1000)
      v = std::numeric_limits<double>::quiet_NaN();
}

class XGBoostLive : public ::testing::TestWithParam<Case> {};

TEST_P(XGBoostLive, SavedModelPredictsWhatXGBoostPredicts) {
  const Case& c = GetParam();
  GRADSCOPE_REQUIRE_DATA(data_file(c.data));
  TreeData all = read_sklearn_csv(data_file(c.data));
  if (c.missing > 0) knock_out(all, c.missing);
  const auto [train, test] = split_rows(all, 0.3, 5);
  XGBoostMatrix dtrain(train), dall(all);
  if (c.categorical) {
    const std::vector<std::string> types(all.cols, "c");
    dtrain.set_feature_types(types);
    dall.set_feature_types(types);
  }
  XGBoostBooster booster({&dtrain});
  booster.set_params({{"nthread", "1"}, {"seed", "3"}});
  booster.set_params(c.params);
  for (int i = 0; i < c.rounds; ++i) booster.update(i, dtrain);

  const TreeEnsemble m = parse_xgboost_json(booster.save_json(), c.name);
  // The same model saved as UBJSON reads to the same bits (XGBoost's values are float32).
  expect_same_model(parse_xgboost_ubjson(booster.save_ubjson(), c.name), m);
  EXPECT_EQ(m.rounds, c.rounds);
  EXPECT_EQ(m.num_features, static_cast<int32_t>(all.cols));
  EXPECT_EQ(m.objective, c.params.at("objective"));
  EXPECT_EQ(m.booster, c.params.count("booster") ? c.params.at("booster") : "gbtree");
  if (c.categorical) {
    std::size_t sets = 0;
    for (const Tree& t : m.trees)
      for (const TreeNode& n : t.nodes)
        sets += n.categorical && n.categories_end > n.categories_begin;
    EXPECT_GT(sets, 0u) << "no category set was learned; the case tests nothing";
  }
  if (c.missing > 0) {
    std::size_t left = 0, right = 0;
    for (const Tree& t : m.trees)
      for (const TreeNode& n : t.nodes)
        if (!n.is_leaf()) (n.default_left ? left : right) += 1;
    EXPECT_GT(left, 0u);
    EXPECT_GT(right, 0u);
  }

  const std::size_t k = static_cast<std::size_t>(m.num_outputs);
  for (const int rounds : {1, c.rounds / 2, c.rounds}) {
    const std::vector<float> margin = booster.predict(dall, true, rounds);
    ASSERT_EQ(margin.size(), all.rows * k);
    int bad = 0;
    for (std::size_t r = 0; r < all.rows; ++r) {
      const std::vector<double> ours = predict_raw(m, all.row(r), rounds);
      for (std::size_t o = 0; o < k; ++o)
        if (!close(ours[o], margin[r * k + o]) && ++bad <= 5)
          ADD_FAILURE() << rounds << " rounds, row " << r << " output " << o << ": gradscope "
                        << ours[o] << ", XGBoost " << margin[r * k + o];
    }
    EXPECT_EQ(bad, 0) << rounds << " rounds";
  }

  const std::vector<float> predicted = booster.predict(dall);
  const std::size_t width = predicted.size() / all.rows;  // multi:softmax: one class per row
  ASSERT_EQ(predicted.size(), all.rows * width);
  int bad = 0;
  for (std::size_t r = 0; r < all.rows; ++r) {
    const std::vector<double> ours = transform_scores(m, predict_raw(m, all.row(r)));
    ASSERT_EQ(ours.size(), width);
    for (std::size_t o = 0; o < width; ++o)
      if (!close(ours[o], predicted[r * width + o]) && ++bad <= 5)
        ADD_FAILURE() << "row " << r << " output " << o << ": gradscope " << ours[o] << ", XGBoost "
                      << predicted[r * width + o];
  }
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(
    RealData, XGBoostLive,
    ::testing::Values(
        Case{"binary_logistic",
             "breast_cancer.csv",
             {{"objective", "binary:logistic"}, {"max_depth", "4"}, {"eta", "0.3"}},
             30},
        Case{"multi_softprob",
             "digits.csv",
             {{"objective", "multi:softprob"}, {"num_class", "10"}, {"max_depth", "3"}},
             15},
        Case{"squared_error",
             "diabetes.csv",
             {{"objective", "reg:squarederror"}, {"max_depth", "4"}, {"eta", "0.1"}},
             40},
        // base_score is already a margin for logitraw (LogisticRaw::ProbToMargin), not a
        // probability: 1.7's margins check the reader as 3.2's do (tests/python).
        Case{"logitraw",
             "breast_cancer.csv",
             {{"objective", "binary:logitraw"}, {"max_depth", "3"}, {"base_score", "0.25"}},
             10},
        Case{"poisson",
             "diabetes.csv",
             {{"objective", "count:poisson"}, {"max_depth", "3"}, {"eta", "0.1"}},
             30},
        Case{"dart",
             "breast_cancer.csv",
             {{"objective", "binary:logistic"},
              {"booster", "dart"},
              {"rate_drop", "0.3"},
              {"skip_drop", "0"},
              {"max_depth", "3"}},
             25},
        Case{"missing_values",
             "breast_cancer.csv",
             {{"objective", "binary:logistic"}, {"max_depth", "5"}},
             30,
             0.2},
        Case{"categorical",
             "digits.csv",
             {{"objective", "multi:softmax"},
              {"num_class", "10"},
              {"tree_method", "hist"},
              {"max_cat_to_onehot", "1"},
              {"max_depth", "3"}},
             10,
             0,
             true},
        Case{"parallel_trees",
             "breast_cancer.csv",
             {{"objective", "binary:logistic"},
              {"num_parallel_tree", "3"},
              {"subsample", "0.7"},
              {"colsample_bynode", "0.7"},
              {"max_depth", "3"}},
             10}),
    [](const ::testing::TestParamInfo<Case>& i) { return i.param.name; });

}  // namespace
}  // namespace gradscope::test
