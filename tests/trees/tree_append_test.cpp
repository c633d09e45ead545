// append_rounds: later rounds of the same model join it renumbered; rounds of another model
// are refused and leave it as it was.
#include "gradscope/core/trees/append.h"

#include <gtest/gtest.h>

#include "../common/error_of.h"

namespace gradscope::test {
namespace {

// `rounds` rounds of `outputs` one-leaf trees; leaf value = round * 10 + output.
TreeEnsemble rounds_of(int32_t rounds, int32_t outputs = 1) {
  TreeEnsemble m;
  m.dialect = TreeDialect::kXGBoost;
  m.objective = "reg:squarederror";
  m.num_features = 3;
  m.num_outputs = outputs;
  m.rounds = rounds;
  m.base_score.assign(static_cast<std::size_t>(outputs), 0.5);
  for (int32_t r = 0; r < rounds; ++r)
    for (int32_t o = 0; o < outputs; ++o) {
      Tree t;
      t.nodes.resize(1);
      t.nodes[0].value = r * 10 + o;
      t.round = r;
      t.output = o;
      m.trees.push_back(t);
    }
  check_ensemble(m);
  return m;
}

TEST(AppendRounds, RenumbersTheLaterRounds) {
  TreeEnsemble m;
  append_rounds(m, rounds_of(2, 2));  // an empty model becomes the first part
  append_rounds(m, rounds_of(3, 2));
  EXPECT_EQ(m.rounds, 5);
  ASSERT_EQ(m.trees.size(), 10u);
  EXPECT_EQ(m.trees[4].round, 2);
  EXPECT_EQ(m.trees[4].nodes[0].value, 0);  // the later part's round 0
  EXPECT_EQ(m.trees[9].round, 4);
  EXPECT_EQ(m.trees[9].output, 1);
  check_ensemble(m);
  const double row[3] = {0, 0, 0};
  EXPECT_EQ(predict_raw(m, row)[1], 0.5 + (1 + 11) + (1 + 11 + 21));
}

TEST(AppendRounds, RefusesAnotherModel) {
  TreeEnsemble m = rounds_of(2);
  TreeEnsemble other = rounds_of(1, 2);
  EXPECT_EQ(error_of([&] { append_rounds(m, other); }), "appending rounds: outputs 2 after 1");
  other = rounds_of(1);
  other.objective = "binary:logistic";
  EXPECT_EQ(error_of([&] { append_rounds(m, other); }),
            "appending rounds: objective binary:logistic after reg:squarederror");
  other = rounds_of(1);
  other.base_score = {0.25};
  EXPECT_EQ(error_of([&] { append_rounds(m, other); }), "appending rounds: the base score differs");
  other = rounds_of(1);
  other.num_features = 4;
  EXPECT_EQ(error_of([&] { append_rounds(m, other); }), "appending rounds: features 4 after 3");
  EXPECT_EQ(m.rounds, 2);
  EXPECT_EQ(m.trees.size(), 2u);
}

}  // namespace
}  // namespace gradscope::test
