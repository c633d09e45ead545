// Live tracking of XGBoost training (XGBoostLive): the model it builds round by round must be
// exactly the model XGBoost saves at the end (every tree, node and weight), whether rounds are
// read one at a time or several at once, for gbtree, multiclass and DART; and the metrics it
// records must be the losses of that model's own predictions after each round.
#include "gradscope/trees/xgboost_live.h"

#include <gtest/gtest.h>

#include <cmath>

#include "../common/error_of.h"
#include "gradscope/core/trees/data.h"
#include "gradscope/trees/data_files.h"
#include "gradscope/trees/read_model.h"
#include "tree_test_util.h"

namespace gradscope::test {
namespace {

struct Trained {
  TreeData train, valid;
};

Trained cancer() {
  auto [train, valid] = split_rows(read_sklearn_csv(data_file("breast_cancer.csv")), 0.3, 9);
  return {std::move(train), std::move(valid)};
}

// XGBoost's logloss: the mean of -log p of the true class, p clipped to [1e-16, 1 - 1e-16].
double logloss(const TreeEnsemble& m, const TreeData& d, int32_t rounds) {
  double sum = 0;
  for (std::size_t r = 0; r < d.rows; ++r) {
    const double p = transform_scores(m, predict_raw(m, d.row(r), rounds))[0];
    const double q = std::min(std::max(d.y[r] == 1 ? p : 1 - p, 1e-16), 1 - 1e-16);
    sum -= std::log(q);
  }
  return sum / static_cast<double>(d.rows);
}

TEST(XGBoostLive, EveryRoundReadAsItEndsMakesTheSavedModelAndItsLosses) {
  GRADSCOPE_REQUIRE_DATA(data_file("breast_cancer.csv"));
  const Trained d = cancer();
  XGBoostMatrix train(d.train), valid(d.valid);
  XGBoostBooster booster({&train, &valid});
  booster.set_params({{"objective", "binary:logistic"}, {"max_depth", "4"}, {"nthread", "1"}});
  XGBoostLive live(booster, {{"train", &train}, {"valid", &valid}}, {1});
  std::vector<int32_t> firsts;
  live.on_rounds([&](const TreeEnsemble& m, int32_t first) {
    firsts.push_back(first);
    EXPECT_EQ(m.rounds, first + 1);  // each round is there as soon as it ends
  });
  constexpr int kRounds = 25;
  for (int i = 0; i < kRounds; ++i) live.update(i, train);
  EXPECT_EQ(live.model().rounds, kRounds);  // nothing left for sync()
  live.sync();
  expect_same_model(live.model(), parse_xgboost_json(booster.save_json(), "saved"));
  ASSERT_EQ(firsts.size(), static_cast<std::size_t>(kRounds));
  for (int i = 0; i < kRounds; ++i) EXPECT_EQ(firsts[static_cast<std::size_t>(i)], i);

  // XGBoost prints six significant digits: the losses agree to that.
  ASSERT_EQ(live.metrics().size(), static_cast<std::size_t>(kRounds));
  for (int i = 0; i < kRounds; ++i) {
    const RoundMetrics& r = live.metrics()[static_cast<std::size_t>(i)];
    EXPECT_EQ(r.round, i);
    ASSERT_EQ(r.values.size(), 2u);
    for (const auto& [name, data] :
         {std::pair{"train-logloss", &d.train}, {"valid-logloss", &d.valid}}) {
      const double ours = logloss(live.model(), *data, i + 1);
      EXPECT_NEAR(r.value(name), ours, 1e-5 * ours) << name << " round " << i;
    }
  }
  // Training loss falls from the first round to the last: the rows are the rounds' own.
  EXPECT_LT(live.metrics().back().value("train-logloss"), live.metrics()[0].value("train-logloss"));
}

TEST(XGBoostLive, RoundsReadSeveralAtATimeMakeTheSameModel) {
  GRADSCOPE_REQUIRE_DATA(data_file("digits.csv"));
  const TreeData digits = read_sklearn_csv(data_file("digits.csv"));
  XGBoostMatrix train(digits);
  XGBoostBooster booster({&train});
  booster.set_params(
      {{"objective", "multi:softprob"}, {"num_class", "10"}, {"max_depth", "3"}, {"nthread", "1"}});
  XGBoostLive live(booster, {}, {4, 0.01, 32});
  std::vector<std::pair<int32_t, int32_t>> reads;  // (first new round, rounds)
  live.on_rounds(
      [&](const TreeEnsemble& m, int32_t first) { reads.emplace_back(first, m.rounds); });
  for (int i = 0; i < 10; ++i) live.update(i, train);
  EXPECT_EQ(live.model().rounds, 8);  // rounds 8 and 9 wait for the next read
  live.sync();
  EXPECT_EQ(reads, (std::vector<std::pair<int32_t, int32_t>>{{0, 4}, {4, 8}, {8, 10}}));
  expect_same_model(live.model(), parse_xgboost_json(booster.save_json(), "saved"));
  EXPECT_EQ(live.model().trees.size(), 100u);
  EXPECT_TRUE(live.metrics().empty());
}

// The default schedule reads as often as 1% of the training time allows: whatever it chose,
// every round is read once, in order, round 0 at once, never more than max_every apart.
TEST(XGBoostLive, BudgetScheduleReadsEveryRoundOnce) {
  GRADSCOPE_REQUIRE_DATA(data_file("breast_cancer.csv"));
  const Trained d = cancer();
  XGBoostMatrix train(d.train);
  XGBoostBooster booster({&train});
  booster.set_params({{"objective", "binary:logistic"}, {"max_depth", "2"}, {"nthread", "1"}});
  XGBoostLive live(booster, {}, {0, 0.01, 5});
  std::vector<std::pair<int32_t, int32_t>> reads;  // (first new round, rounds)
  live.on_rounds(
      [&](const TreeEnsemble& m, int32_t first) { reads.emplace_back(first, m.rounds); });
  for (int i = 0; i < 40; ++i) live.update(i, train);
  live.sync();
  ASSERT_FALSE(reads.empty());
  EXPECT_EQ(reads[0], (std::pair<int32_t, int32_t>{0, 1}));
  for (std::size_t k = 1; k < reads.size(); ++k) {
    EXPECT_EQ(reads[k].first, reads[k - 1].second);
    EXPECT_LE(reads[k].second - reads[k].first, 5);
  }
  EXPECT_EQ(reads.back().second, 40);
  expect_same_model(live.model(), parse_xgboost_json(booster.save_json(), "saved"));
}

TEST(XGBoostLive, DartWeightsAreTheFinalOnesAfterSync) {
  GRADSCOPE_REQUIRE_DATA(data_file("breast_cancer.csv"));
  const Trained d = cancer();
  XGBoostMatrix train(d.train);
  XGBoostBooster booster({&train});
  booster.set_params({{"objective", "binary:logistic"},
                      {"booster", "dart"},
                      {"rate_drop", "0.3"},
                      {"skip_drop", "0"},
                      {"max_depth", "3"},
                      {"nthread", "1"}});
  XGBoostLive live(booster, {{"train", &train}}, {1});  // every round: all read before sync
  for (int i = 0; i < 15; ++i) live.update(i, train);
  const TreeEnsemble saved = parse_xgboost_json(booster.save_json(), "saved");
  ASSERT_EQ(live.model().trees.size(), saved.trees.size());
  // Before sync the weights are those of the rounds' own time: later drops rescaled some.
  std::size_t stale = 0;
  for (std::size_t t = 0; t < saved.trees.size(); ++t)
    stale += live.model().trees[t].weight != saved.trees[t].weight;
  EXPECT_GT(stale, 0u);
  live.sync();
  expect_same_model(live.model(), saved);
  EXPECT_EQ(live.metrics().size(), 15u);
}

TEST(XGBoostLive, ContinuesABoosterThatAlreadyHasRounds) {
  GRADSCOPE_REQUIRE_DATA(data_file("diabetes.csv"));
  const TreeData diabetes = read_sklearn_csv(data_file("diabetes.csv"));
  XGBoostMatrix train(diabetes);
  XGBoostBooster booster({&train});
  booster.set_params({{"objective", "reg:squarederror"}, {"nthread", "1"}});
  for (int i = 0; i < 3; ++i) booster.update(i, train);
  XGBoostLive live(booster);
  for (int i = 3; i < 6; ++i) live.update(i, train);
  live.sync();
  expect_same_model(live.model(), parse_xgboost_json(booster.save_json(), "saved"));
  EXPECT_EQ(error_of([&] { XGBoostLive(booster, {}, {-1}); }),
            "xgboost live: every must be at least 0, got -1");
  EXPECT_EQ(error_of([&] {
              XGBoostLive(booster, {}, {0, 0});
            }),
            "xgboost live: budget must be in (0, 1], got 0.000000");
  EXPECT_EQ(error_of([&] {
              XGBoostLive(booster, {}, {0, 0.01, 0});
            }),
            "xgboost live: max_every must be at least 1, got 0");
}

TEST(XGBoostEval, ParsesXGBoostsLines) {
  const RoundMetrics m =
      parse_xgboost_eval("[12]\ttrain-logloss:0.25\tvalid-ndcg@5:0.5\tv-my:m:1e-3");
  EXPECT_EQ(m.round, 12);
  ASSERT_EQ(m.values.size(), 3u);
  EXPECT_EQ(m.value("train-logloss"), 0.25);
  EXPECT_EQ(m.value("valid-ndcg@5"), 0.5);
  EXPECT_EQ(m.value("v-my:m"), 1e-3);
  EXPECT_TRUE(std::isnan(m.value("absent")));
  EXPECT_TRUE(std::isnan(parse_xgboost_eval("[0]\ttrain-rmse:nan").value("train-rmse")));
  EXPECT_TRUE(parse_xgboost_eval("[0]").values.empty());
  const auto err = [](const std::string& line) {
    return error_of([&] { parse_xgboost_eval(line); });
  };
  EXPECT_EQ(err(""), "xgboost evaluation '': does not start with [round]");
  EXPECT_EQ(err("[x]\ta:1"), "xgboost evaluation '[x]\ta:1': no round number");
  EXPECT_EQ(err("[1] a:1"), "xgboost evaluation '[1] a:1': expected a tab at byte 3");
  EXPECT_EQ(err("[1]\ttrain-logloss"),
            "xgboost evaluation '[1]\ttrain-logloss': \"train-logloss\" is not name:value");
  EXPECT_EQ(err("[1]\ta:0.5x"), "xgboost evaluation '[1]\ta:0.5x': \"0.5x\" is not a number");
}

}  // namespace
}  // namespace gradscope::test
