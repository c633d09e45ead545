// The validation's ground truth (update_cosines.h, draw_counts.h) on hand-computed steps and
// batches: it is what every hit, miss and false alarm in docs/validation.md is judged by.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>

#include "../common/error_of.h"
#include "draw_counts.h"
#include "update_cosines.h"

namespace gradscope::scenarios {
namespace {

using test::error_of;

at::Tensor rows(std::initializer_list<float> v, int64_t n) { return at::tensor(std::vector<float>(v)).reshape({n, -1}); }

TEST(UpdateCosines, CosinesBetweenConsecutiveRealUpdates) {
  UpdateCosines c(2, 2);
  const at::Tensor id = at::tensor(std::vector<int64_t>{0});
  c.add(id, rows({1, 0}, 1), rows({2, 0}, 1));     // update (1, 0): the first, no cosine yet
  c.add(id, rows({2, 0}, 1), rows({1, 0}, 1));     // (-1, 0): cosine -1
  c.add(id, rows({1, 0}, 1), rows({1, 1e-9f}, 1)); // below 1e-6 x ||row||: not a real update
  c.add(id, rows({1, 0}, 1), rows({1, 1}, 1));     // (0, 1) against (-1, 0): cosine 0
  EXPECT_EQ(c.updates(0), 3);
  EXPECT_EQ(c.cosines(0), (std::vector<float>{-1.0f, 0.0f}));
  EXPECT_DOUBLE_EQ(c.mean_cosine(0), -0.5);
  EXPECT_DOUBLE_EQ(c.recent_mean_cosine(0, 1), 0.0);
  EXPECT_DOUBLE_EQ(c.recent_mean_cosine(0, 5), -0.5);  // all, when fewer than asked
  EXPECT_EQ(c.updates(1), 0);
  EXPECT_TRUE(std::isnan(c.mean_cosine(1)));
}

TEST(UpdateCosines, ASignFlipEveryStepGivesMinusOne) {
  UpdateCosines c(1, 3);
  const at::Tensor id = at::tensor(std::vector<int64_t>{0});
  at::Tensor e = rows({1, -2, 3}, 1);
  for (int step = 0; step < 5; ++step) {
    const at::Tensor next = -0.9 * e;  // e <- (1 - 1.9) e, the planted oscillation
    c.add(id, e, next);
    e = next;
  }
  EXPECT_EQ(c.updates(0), 5);
  ASSERT_EQ(c.cosines(0).size(), 4u);
  EXPECT_NEAR(c.mean_cosine(0), -1.0, 1e-6);
}

TEST(UpdateCosines, BadInputNamesTheMismatch) {
  UpdateCosines c(2, 2);
  EXPECT_EQ(error_of([&] { c.add(at::tensor(std::vector<int64_t>{0, 1}), rows({1, 0}, 1), rows({1, 0}, 1)); }),
            "update cosines: 2 ids need rows of 2 x 2 before and after");
  EXPECT_EQ(error_of([&] { c.add(at::tensor(std::vector<int64_t>{2}), rows({1, 0}, 1), rows({1, 1}, 1)); }),
            "update cosines: id 2 is outside [0, 2)");
  EXPECT_EQ(error_of([] { UpdateCosines(0, 4); }), "update cosines: a table of 0 x 4 rows; both sizes must be >= 1");
}

TEST(DrawCounts, CountsWhatTheSamplerDrew) {
  DrawCounts d(2, 4);
  d.add({at::tensor(std::vector<int64_t>{0, 0, 1}), at::tensor(std::vector<int64_t>{0, 0, 1}),
         at::tensor(std::vector<int64_t>{0, 2, 2})});
  EXPECT_EQ(d.positives(0), 2);
  EXPECT_EQ(d.negatives(2), 2);
  // Negatives 1/3, 0, 2/3, 0 against 1/4 each: (1/12 + 3/12 + 5/12 + 3/12) / 2.
  EXPECT_DOUBLE_EQ(d.negative_tv_to_uniform(), 0.5);
  // Item lookups 3, 1, 2 (item 3 never): sorted 1, 2, 3 -> (-2 + 0 + 6) / (3 x 6).
  EXPECT_DOUBLE_EQ(d.item_lookup_gini(), 4.0 / 18.0);
  EXPECT_DOUBLE_EQ(d.user_lookup_gini(), 1.0 / 6.0);  // 1, 2 -> (-1 + 2) / (2 x 3)
  EXPECT_EQ(d.never_drawn_items(), (std::vector<int64_t>{3}));
}

TEST(DrawCounts, NothingDrawnAndBadIds) {
  DrawCounts d(1, 3);
  EXPECT_TRUE(std::isnan(d.negative_tv_to_uniform()));
  EXPECT_TRUE(std::isnan(d.item_lookup_gini()));
  EXPECT_EQ(d.never_drawn_items(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(error_of([&] {
              d.add({at::tensor(std::vector<int64_t>{0}), at::tensor(std::vector<int64_t>{3}),
                     at::tensor(std::vector<int64_t>{0})});
            }),
            "draw counts: positive item id 3 is outside [0, 3)");
}

TEST(DrawCounts, GiniOfPositiveValues) {
  EXPECT_DOUBLE_EQ(gini_of_positive({5, 5, 5, 0}), 0.0);           // equal (the zero is left out)
  EXPECT_DOUBLE_EQ(gini_of_positive({1, 0, 0, 0, 0, 0}), 0.0);     // one row looked up
  EXPECT_DOUBLE_EQ(gini_of_positive({0, 0, 0, 1, 99}), 0.49);      // (-1 + 99) / (2 x 100)
  EXPECT_TRUE(std::isnan(gini_of_positive({0, 0})));
}

}  // namespace
}  // namespace gradscope::scenarios
