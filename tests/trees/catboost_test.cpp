// The CatBoost JSON reader against CatBoost: the small fixture models must give, for every
// fixture row, the predictions CatBoost computed (their x and y). The 992-tree creditgermany
// model comes without CatBoost's predictions, so it is checked three other ways: its shape,
// a second evaluation written here straight from the JSON (independent of the reader), and its
// ranking of the test labels.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "gradscope/trees/read_model.h"
#include "tree_test_util.h"

namespace gradscope::test {
namespace {

class CatBoostFixture : public ::testing::TestWithParam<std::string> {};

TEST_P(CatBoostFixture, PredictionsMatchCatBoost) {
  const std::string name = GetParam();
  GRADSCOPE_REQUIRE_DATA(fixture("catboost/" + name + "-model.json"));
  const TreeEnsemble m = read_tree_model(fixture("catboost/" + name + "-model.json"));
  EXPECT_EQ(m.dialect, TreeDialect::kCatBoost);
  EXPECT_EQ(m.objective, "RMSE");  // gen_catboost_tests.py trains with RMSE: y is the raw score
  const nlohmann::json io = nlohmann::json::parse(read_text(fixture("catboost/" + name + ".json")));
  const auto x = io.at("x").get<std::vector<std::vector<double>>>();
  const auto y = io.at("y").get<std::vector<double>>();
  ASSERT_EQ(x.size(), y.size());
  ASSERT_FALSE(x.empty());
  for (std::size_t r = 0; r < x.size(); ++r) {
    ASSERT_EQ(x[r].size(), static_cast<std::size_t>(m.num_features));
    const double ours = transform_scores(m, predict_raw(m, x[r].data()))[0];
    EXPECT_TRUE(close(ours, y[r]))
        << name << " row " << r << ": gradscope " << ours << ", CatBoost " << y[r];
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CatBoostFixture, ::testing::Values("and", "xor", "regression"));

// CatBoost's rule written out again from the JSON alone: the leaf of an oblivious tree is
// sum over levels l of (x[feature_l] > border_l) << l; raw = scale * sum + bias.
double reference_score(const nlohmann::json& model, const std::vector<double>& x) {
  double sum = 0;
  for (const auto& tree : model.at("oblivious_trees")) {
    std::size_t leaf = 0, level = 0;
    for (const auto& s : tree.at("splits")) {
      const auto f = s.at("float_feature_index").get<std::size_t>();
      const bool bit = static_cast<float>(x.at(f)) > s.at("border").get<float>();
      leaf |= static_cast<std::size_t>(bit) << level++;
    }
    sum += tree.at("leaf_values").at(leaf).get<double>();
  }
  const auto& sb = model.at("scale_and_bias");
  return sb.at(0).get<double>() * sum + sb.at(1).at(0).get<double>();
}

TEST(CatBoostCreditGermany, ShapeReferenceAndRanking) {
  GRADSCOPE_REQUIRE_DATA(fixture("catboost/creditgermany.json"));
  const TreeEnsemble m = read_tree_model(fixture("catboost/creditgermany.json"));
  EXPECT_EQ(m.rounds, 992);
  EXPECT_EQ(m.trees.size(), 992u);
  EXPECT_EQ(m.num_features, 20);
  EXPECT_EQ(m.objective, "Quantile");
  EXPECT_EQ(m.link, TreeLink::kIdentity);
  std::size_t depth6 = 0;
  for (const Tree& t : m.trees) depth6 += t.levels.size() == 6;
  EXPECT_EQ(depth6, 974u);  // the rest have 1 to 4 levels

  const nlohmann::json model =
      nlohmann::json::parse(read_text(fixture("catboost/creditgermany.json")));
  const auto rows = read_table(fixture("catboost/creditgermany_test.tsv"));
  ASSERT_EQ(rows.size(), 100u);
  std::vector<std::pair<double, double>> scored;  // (score, label)
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const std::vector<double> x(rows[r].begin() + 1, rows[r].end());  // column 0: the label
    const double ours = predict_raw(m, x.data())[0];
    EXPECT_TRUE(close(ours, reference_score(model, x))) << "row " << r;
    scored.emplace_back(ours, rows[r][0]);
  }
  // A median regression of a 0/1 label must rank the positives above the negatives far more
  // often than chance (AUC 0.5); a reader that mixed up features or leaf order would not.
  double pairs = 0, won = 0;
  for (const auto& [s1, y1] : scored)
    for (const auto& [s0, y0] : scored)
      if (y1 == 1 && y0 == 0) {
        ++pairs;
        won += s1 > s0 ? 1 : s1 == s0 ? 0.5 : 0;
      }
  ASSERT_GT(pairs, 0);
  EXPECT_GT(won / pairs, 0.7);  // 0.747 measured; chance is 0.5
}

}  // namespace
}  // namespace gradscope::test
