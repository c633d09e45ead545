// profile_embedding: Lorenz points, histograms and Gini against values worked out by hand.
#include "gradscope/core/embedding/profile.h"

#include <gtest/gtest.h>

#include <cmath>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

using Points = std::vector<std::pair<double, double>>;

void expose(EmbeddingRows& rows, int64_t row, int times) {
  for (int t = 0; t < times; ++t) rows.expose(row, t);
}

void update(EmbeddingRows& rows, int64_t row, float delta) { rows.record_update(row, &delta, 1.0); }

void expect_points(const Points& got, const Points& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i].first, want[i].first, 1e-15) << i;
    EXPECT_NEAR(got[i].second, want[i].second, 1e-15) << i;
  }
}

// Rows 1..4 exposed 1, 3, 6 and 100 times (110 in all); rows 0 and 5 never, though row 0 is
// given a large update that must not count. Velocities of the exposed rows: 0 (never
// updated), 0.1 (one update of norm 1), 0.95 (norm 5, then -5) and 10 (norm 100, then four of
// norm 10, all one way); oscillations 0, 0, -0.2 and 1 - 0.8^4 = 0.5904.
EmbeddingRows table() {
  EmbeddingRows rows(6, 1);
  expose(rows, 1, 1);
  expose(rows, 2, 3);
  expose(rows, 3, 6);
  expose(rows, 4, 100);
  update(rows, 0, 1000.f);
  update(rows, 2, 1.f);
  update(rows, 3, 5.f);
  update(rows, 3, -5.f);
  update(rows, 4, 100.f);
  for (int k = 0; k < 4; ++k) update(rows, 4, 10.f);
  return rows;
}

TEST(EmbeddingProfile, LorenzCurveOfKnownCounts) {
  const EmbeddingRows rows = table();
  // Sorted 1, 3, 6, 100; cumulative 0, 1, 4, 10, 110. At most n + 1 = 5 points.
  EmbeddingProfile p = profile_embedding("item", rows);
  EXPECT_EQ(p.layer, "item");
  EXPECT_EQ(p.num_embeddings, 6);
  EXPECT_EQ(p.exposed_rows, 4);
  expect_points(p.lorenz, {{0, 0}, {0.25, 1 / 110.}, {0.5, 4 / 110.}, {0.75, 10 / 110.}, {1, 1}});
  EXPECT_EQ(p.lorenz.front(), std::make_pair(0.0, 0.0));
  EXPECT_EQ(p.lorenz.back(), std::make_pair(1.0, 1.0));
  // Gini: sum of |x_i - x_j| over pairs = 300; 2 x 300 / (2 n^2 mean) = 600 / 880.
  EXPECT_NEAR(p.popularity_gini, 15.0 / 22.0, 1e-12);

  p = profile_embedding("item", rows, 20, 3);
  expect_points(p.lorenz, {{0, 0}, {0.5, 4 / 110.}, {1, 1}});
  // Between whole rows the curve is linear: at 4/3 rows, 1 + (1/3) x 3 = 2 exposures;
  // at 8/3 rows, 4 + (2/3) x 6 = 8.
  p = profile_embedding("item", rows, 20, 4);
  expect_points(p.lorenz, {{0, 0}, {1 / 3., 2 / 110.}, {2 / 3., 8 / 110.}, {1, 1}});
}

TEST(EmbeddingProfile, ExposureHistogramIsLogSpacedFromOne) {
  const EmbeddingProfile p = profile_embedding("item", table(), 2);
  ASSERT_EQ(p.exposure.edges.size(), 3u);
  EXPECT_EQ(p.exposure.edges[0], 1.0);
  EXPECT_NEAR(p.exposure.edges[1], 10.0, 1e-12);
  EXPECT_EQ(p.exposure.edges[2], 100.0);
  EXPECT_EQ(p.exposure.counts, (std::vector<int64_t>{3, 1}));  // 100 sits on the last edge
  EXPECT_EQ(p.exposure.below, 0);
}

TEST(EmbeddingProfile, VelocityHistogramCountsZerosBelow) {
  const EmbeddingProfile p = profile_embedding("item", table(), 2);
  ASSERT_EQ(p.velocity.edges.size(), 3u);
  EXPECT_EQ(p.velocity.edges.front(), static_cast<double>(0.1f));  // the smallest positive
  EXPECT_NEAR(p.velocity.edges[1], 1.0, 1e-7);
  EXPECT_EQ(p.velocity.edges.back(), 10.0);  // row 0's 100 is not exposed, so not counted
  EXPECT_EQ(p.velocity.counts, (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(p.velocity.below, 1);
  EXPECT_EQ(p.velocity.nonfinite, 0);
}

TEST(EmbeddingProfile, OscillationBinsSpanMinusOneToOne) {
  const EmbeddingProfile p = profile_embedding("item", table(), 4);
  EXPECT_EQ(p.oscillation.edges, (std::vector<double>{-1, -0.5, 0, 0.5, 1}));
  EXPECT_EQ(p.oscillation.counts, (std::vector<int64_t>{0, 1, 2, 1}));
  EXPECT_EQ(p.oscillation.below, 0);
}

TEST(EmbeddingProfile, EqualValuesSpanOneDecade) {
  EmbeddingRows rows(3, 1);
  for (int64_t r = 0; r < 3; ++r) {
    expose(rows, r, 1);
    update(rows, r, 2.f);  // velocity 0.2 each
  }
  const EmbeddingProfile p = profile_embedding("t", rows, 2);
  EXPECT_EQ(p.exposure.edges.front(), 1.0);
  EXPECT_EQ(p.exposure.edges.back(), 10.0);
  EXPECT_EQ(p.exposure.counts, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(p.velocity.edges.front(), static_cast<double>(0.2f));
  EXPECT_NEAR(p.velocity.edges.back(), 2.0, 1e-7);
  EXPECT_EQ(p.velocity.counts, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(p.popularity_gini, 0.0);
  expect_points(p.lorenz, {{0, 0}, {1 / 3., 1 / 3.}, {2 / 3., 2 / 3.}, {1, 1}});
}

TEST(EmbeddingProfile, AllVelocitiesZeroLeavesNoBins) {
  EmbeddingRows rows(2, 1);
  expose(rows, 0, 2);
  const EmbeddingProfile p = profile_embedding("t", rows);
  EXPECT_TRUE(p.velocity.edges.empty());
  EXPECT_TRUE(p.velocity.counts.empty());
  EXPECT_EQ(p.velocity.below, 1);
  expect_points(p.lorenz, {{0, 0}, {1, 1}});  // one exposed row: the two end points
}

TEST(EmbeddingProfile, NoExposedRowsGivesEmptyDistributions) {
  EmbeddingRows rows(3, 2);
  const EmbeddingProfile p = profile_embedding("cold", rows);
  EXPECT_EQ(p.num_embeddings, 3);
  EXPECT_EQ(p.exposed_rows, 0);
  EXPECT_TRUE(p.lorenz.empty());
  EXPECT_TRUE(std::isnan(p.popularity_gini));
  for (const Histogram* h : {&p.exposure, &p.velocity, &p.oscillation}) {
    EXPECT_TRUE(h->edges.empty());
    EXPECT_TRUE(h->counts.empty());
    EXPECT_EQ(h->below, 0);
  }
}

TEST(EmbeddingProfile, BadArgumentsThrowNamingTheLayer) {
  const EmbeddingRows rows(1, 1);
  try {
    profile_embedding("item", rows, 0);
    FAIL() << "bins 0 accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "embedding profile 'item': bins must be >= 1, got 0");
  }
  EXPECT_THROW(profile_embedding("item", rows, 20, 1), Error);
  EXPECT_THROW(profile_embedding("item", rows, -3, 101), Error);
}

}  // namespace
}  // namespace gradscope
