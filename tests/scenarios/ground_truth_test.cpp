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
  EXPECT_EQ(c.norms(0), (std::vector<float>{1.0f, 1.0f, 1.0f}));
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

// Updates (k, 0) then (-(k + 1), 0), ... for k = 1..8: cosines all -1, norms 1..8. Windows of
// 3 cosines: [c0 c1 c2] ends updates 2..4 (mean norm 3), [c3 c4 c5] updates 5..7 (mean norm
// 6); c6 is in the window still filling and left out.
TEST(UpdateCosines, WindowsAreTheLastTwoCompleteOnesFromTheFirstCosine) {
  UpdateCosines c(2, 2);
  const at::Tensor id = at::tensor(std::vector<int64_t>{0});
  float x = 100;  // far from 0: every update is a real one
  for (int k = 1; k <= 8; ++k) {
    const float next = x + (k % 2 ? k : -k);
    c.add(id, rows({x, 0}, 1), rows({next, 0}, 1));
    x = next;
  }
  ASSERT_EQ(c.cosines(0).size(), 7u);
  UpdateCosines::Windows w = c.windows(0, 3);
  EXPECT_EQ(w.completed, 2);
  EXPECT_DOUBLE_EQ(w.last_cosine, -1.0);
  EXPECT_DOUBLE_EQ(w.prior_cosine, -1.0);
  EXPECT_DOUBLE_EQ(w.last_norm, 6.0);
  EXPECT_DOUBLE_EQ(w.prior_norm, 3.0);
  w = c.windows(0, 4);  // one complete window: cosines 0..3, updates 2..5
  EXPECT_EQ(w.completed, 1);
  EXPECT_DOUBLE_EQ(w.last_norm, 3.5);
  EXPECT_DOUBLE_EQ(w.prior_norm, 0.0);
  w = c.windows(0, 1);  // every cosine its own window: the last two, updates 7 and 8
  EXPECT_EQ(w.completed, 7);
  EXPECT_DOUBLE_EQ(w.last_norm, 8.0);
  EXPECT_DOUBLE_EQ(w.prior_norm, 7.0);
  EXPECT_EQ(c.windows(1, 3).completed, 0);  // never updated
  EXPECT_EQ(error_of([&] { c.windows(0, 0); }), "update cosines: windows of 0 cosines; need >= 1");
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
  EXPECT_TRUE(d.never_drawn_users().empty());
}

TEST(DrawCounts, NothingDrawnAndBadIds) {
  DrawCounts d(1, 3);
  EXPECT_TRUE(std::isnan(d.negative_tv_to_uniform()));
  EXPECT_TRUE(std::isnan(d.item_lookup_gini()));
  EXPECT_EQ(d.never_drawn_items(), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(d.never_drawn_users(), (std::vector<int64_t>{0}));
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
