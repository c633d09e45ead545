// The dynamics of real LightGBM and CatBoost models (tests/data/trees): every round's
// loss from the running sums equals the library-exact prediction of that prefix, whatever the
// format's arithmetic (LightGBM's doubles, CatBoost's scale and bias, 992 oblivious trees).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "../common/require_data.h"
#include "../core/tree_builders.h"
#include "tree_test_util.h"
#include "gradscope/core/trees/dynamics.h"
#include "gradscope/trees/read_model.h"

namespace gradscope {
namespace {

using test::fixture;

// Whitespace-separated rows; with `label_first`, the first column is the label.
TreeData read_rows(const std::string& path, bool label_first) {
  std::ifstream in(path);
  TreeData d;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<double> v;
    for (double x; fields >> x;) v.push_back(x);
    if (v.empty()) continue;
    if (label_first) {
      d.y.push_back(v.front());
      v.erase(v.begin());
    }
    if (d.rows == 0) d.cols = v.size();
    EXPECT_EQ(v.size(), d.cols) << path << " row " << d.rows;
    d.x.insert(d.x.end(), v.begin(), v.end());
    ++d.rows;
  }
  return d;
}

TEST(TreeFixtures, CatBoostsObliviousRoundsMatchTheirPrefixPredictions) {
  GRADSCOPE_REQUIRE_DATA(fixture("catboost/regression-model.json"));
  // regression.json holds inputs and CatBoost's own predictions: taken as labels, the RMSE of
  // the whole model against them is CatBoost's rounding, and every prefix matches predict_raw.
  const TreeEnsemble m = read_tree_model(fixture("catboost/regression-model.json"));
  std::ifstream in(fixture("catboost/regression.json"));
  const nlohmann::json j = nlohmann::json::parse(in);
  TreeData d;
  d.cols = static_cast<std::size_t>(m.num_features);
  for (const auto& row : j.at("x")) {
    for (const auto& v : row) d.x.push_back(v.get<double>());
    ++d.rows;
  }
  for (const auto& v : j.at("y")) d.y.push_back(v.get<double>());
  const TreeDynamicsReport r = analyze_tree_dynamics(m, {&d});
  EXPECT_EQ(r.loss, TreeLoss::kRmse);
  EXPECT_FALSE(r.has_gain);  // CatBoost files hold no split gains: shares are split counts
  EXPECT_EQ(r.base_train_loss, test::prefix_loss(m, d, 0));
  for (const int32_t k : {1, 2, r.rounds / 2, r.rounds})
    EXPECT_EQ(r.per_round[static_cast<std::size_t>(k - 1)].train_loss, test::prefix_loss(m, d, k))
        << k;
  EXPECT_LT(r.per_round.back().train_loss, 1e-5);

  // The 992-tree credit model: a Quantile loss has no metric here, and the rules say so.
  const TreeEnsemble credit = read_tree_model(fixture("catboost/creditgermany.json"));
  const TreeData rows = read_rows(fixture("catboost/creditgermany_test.tsv"), true);
  ASSERT_EQ(rows.cols, static_cast<std::size_t>(credit.num_features));
  const TreeDynamicsReport c = analyze_tree_dynamics(credit, {&rows});
  EXPECT_EQ(c.rounds, 992);
  EXPECT_EQ(c.per_round[0].max_depth, 6);
  EXPECT_EQ(c.per_round[0].leaves, 64);
  EXPECT_THAT(c.not_judged,
              ::testing::Contains(::testing::HasSubstr("the objective 'Quantile' has no metric")));
  double sum = 0;  // round 500's contribution by hand
  for (std::size_t i = 0; i < rows.rows; ++i)
    sum += std::fabs(tree_output(credit, credit.trees[500], rows.row(i)));
  EXPECT_NEAR(c.per_round[500].contribution, sum / static_cast<double>(rows.rows), 1e-12);
  std::cout << "creditgermany: findings";
  for (const TreeFinding& f : c.findings)
    std::cout << " " << tree_flag_name(f.flag) << "@" << f.first_round;
  std::cout << "\n";
}

TEST(TreeFixtures, LightGBMRoundsMatchTheirPrefixPredictionsBinaryAndMulticlass) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/lgmulticlass.model"));
  const TreeEnsemble multi = read_tree_model(fixture("lightgbm/lgmulticlass.model"));
  const TreeData rows = read_rows(fixture("lightgbm/multiclass_test.tsv"), true);
  ASSERT_EQ(rows.cols, static_cast<std::size_t>(multi.num_features));
  const TreeDynamicsReport r = analyze_tree_dynamics(multi, {&rows, &rows});
  EXPECT_EQ(r.outputs, 5);
  EXPECT_EQ(r.loss, TreeLoss::kMLogLoss);
  EXPECT_TRUE(r.has_gain);
  for (const int32_t k : {1, r.rounds / 2, r.rounds})
    EXPECT_EQ(r.per_round[static_cast<std::size_t>(k - 1)].valid_loss,
              test::prefix_loss(multi, rows, k))
        << k;

  // The binary model's rows carry no label: contributions and velocity, no loss.
  const TreeEnsemble binary = read_tree_model(fixture("lightgbm/lg_breast_cancer.txt"));
  const TreeData unlabelled = read_rows(fixture("lightgbm/lg_breast_cancer_data.txt"), false);
  const TreeDynamicsReport b = analyze_tree_dynamics(binary, {&unlabelled});
  EXPECT_TRUE(std::isnan(b.base_train_loss));
  double sum = 0;  // round 3's contribution by hand
  for (std::size_t i = 0; i < unlabelled.rows; ++i)
    for (const Tree& t : binary.trees)
      if (t.round == 3) sum += std::fabs(tree_output(binary, t, unlabelled.row(i)));
  EXPECT_NEAR(b.per_round[3].contribution, sum / static_cast<double>(unlabelled.rows), 1e-12);
  EXPECT_THAT(b.not_judged, ::testing::Contains(::testing::HasSubstr("STAGNANT from the start")));
}

}  // namespace
}  // namespace gradscope
