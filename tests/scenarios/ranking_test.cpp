// Leave-one-out ranking (ranking.h) and the validation split: hand-computed ranks, HR and NDCG.
#include "ranking.h"

#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "interactions.h"

namespace gradscope::scenarios {
namespace {

// 3 users, 5 items. Training counts: item 1 three times, item 2 twice, item 3 once, items 0
// and 4 never, so the popularity order is 1, 2, 3, 0, 4 (0 before 4: ties go to the lower id).
Interactions tiny() {
  Interactions d;
  d.name = "tiny";
  d.description = "hand-made";
  d.users = 3;
  d.items = 5;
  d.train = {{0, 1}, {1, 1}, {2, 1}, {0, 2}, {1, 2}, {2, 3}};
  d.seen = {{1, 2}, {1, 2}, {1, 3}};
  d.test_user = {0, 2};
  d.test_item = {3, 4};
  return d;
}

TEST(Ranking, AddCountsHitsAndDiscountsByRank) {
  Ranking r;
  r.add(0, 10);   // first: NDCG 1
  r.add(3, 10);   // fourth: 1 / log2(5)
  r.add(10, 10);  // outside the top 10
  r.finish();
  EXPECT_EQ(r.user_hr, (std::vector<double>{1, 1, 0}));
  ASSERT_EQ(r.user_ndcg.size(), 3u);
  EXPECT_DOUBLE_EQ(r.user_ndcg[0], 1.0);
  EXPECT_DOUBLE_EQ(r.user_ndcg[1], 1.0 / std::log2(5.0));
  EXPECT_DOUBLE_EQ(r.user_ndcg[2], 0.0);
  EXPECT_DOUBLE_EQ(r.hr, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(r.ndcg, (1.0 + 1.0 / std::log2(5.0)) / 3.0);
}

TEST(Ranking, NoUserLeavesZeros) {
  Ranking r;
  r.finish();
  EXPECT_EQ(r.hr, 0.0);
  EXPECT_EQ(r.ndcg, 0.0);
}

TEST(Ranking, ItemsByPopularityBreaksTiesByLowerId) {
  EXPECT_EQ(items_by_popularity(tiny()), (std::vector<int64_t>{1, 2, 3, 0, 4}));
}

TEST(Ranking, MostPopularLeavesOutTheUsersTrainingItems) {
  // User 0 (seen 1, 2): order 1, 2, 3 -> item 3 is first among the unseen: rank 0.
  // User 2 (seen 1, 3): order 1, 2, 3, 0, 4 -> unseen 2, 0, 4: item 4 has rank 2.
  const Ranking r = rank_most_popular(tiny(), 3);
  EXPECT_EQ(r.user_hr, (std::vector<double>{1, 1}));
  EXPECT_EQ(r.user_ndcg, (std::vector<double>{1.0, 0.5}));
  EXPECT_DOUBLE_EQ(r.hr, 1.0);
  EXPECT_DOUBLE_EQ(r.ndcg, 0.75);
  EXPECT_EQ(rank_most_popular(tiny(), 2).user_hr, (std::vector<double>{1, 0}));  // rank 2 misses the top 2
}

TEST(Ranking, HeldOutRankIsTheNumberOfUnseenItemsScoredAbove) {
  // dim 1: score = user x item. User 0 scores items 0..4 as 5, 4, 3, 2, 1 and has seen 1, 2:
  // only item 0 (5) is unseen and above item 3 (2): rank 1. User 2 has seen 1 and 3; item 4
  // (1) is below 0 and 2: rank 2.
  const at::Tensor users = at::tensor({1.0f, 1.0f, 1.0f}).reshape({3, 1});
  const at::Tensor items = at::tensor({5.0f, 4.0f, 3.0f, 2.0f, 1.0f}).reshape({5, 1});
  const Ranking r = rank_held_out(tiny(), users, items, 10);
  ASSERT_EQ(r.user_ndcg.size(), 2u);
  EXPECT_DOUBLE_EQ(r.user_ndcg[0], 1.0 / std::log2(3.0));
  EXPECT_DOUBLE_EQ(r.user_ndcg[1], 0.5);
  EXPECT_DOUBLE_EQ(r.hr, 1.0);
}

TEST(Ranking, ValidationSplitHoldsOutEachUsersLatestTrainingItem) {
  Interactions d = tiny();
  d.seen = {{0, 1, 2}, {3}, {1, 3}};  // time order; user 1 has a single training item
  d.train = {{0, 0}, {0, 1}, {0, 2}, {1, 3}, {2, 1}, {2, 3}};
  const Interactions v = validation_split(d);
  EXPECT_EQ(v.name, "tiny (validation split)");
  EXPECT_EQ(v.description, "hand-made (validation split)");
  EXPECT_EQ(v.users, 3);
  EXPECT_EQ(v.items, 5);
  EXPECT_EQ(v.train, (std::vector<std::pair<int64_t, int64_t>>{{0, 0}, {0, 1}, {1, 3}, {2, 1}}));
  EXPECT_EQ(v.seen, (std::vector<std::vector<int64_t>>{{0, 1}, {3}, {1}}));
  EXPECT_EQ(v.test_user, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(v.test_item, (std::vector<int64_t>{2, 3}));  // the test items 3 and 4 are gone
}

}  // namespace
}  // namespace gradscope::scenarios
