// EmbeddingRows state updates and the embedding rules, against double-precision references.
#include "gradscope/core/embedding/rows.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "../common/error_of.h"
#include "gradscope/core/embedding/report.h"
#include "gradscope/core/error.h"

namespace gradscope {
namespace {

TEST(EmbeddingRows, VelocityAndOscillationFollowTheirEmas) {
  EmbeddingRows rows(3, 4);
  const float up[4] = {1, 2, 2, 0}, down[4] = {-1, -2, -2, 0};  // norm 3
  double v = 0, o = 0;
  for (int t = 0; t < 10; ++t) {
    rows.expose(0, t);
    rows.record_update(0, t % 2 ? down : up, 10.0);
    v = 0.9 * v + 0.1 * 3.0;
    if (t > 0) o = 0.8 * o + 0.2 * -1.0;
  }
  EXPECT_NEAR(rows.velocity(0), v, 1e-6);
  EXPECT_NEAR(rows.oscillation(0), o, 1e-6);
  EXPECT_EQ(rows.exposure(0), 10u);
  EXPECT_EQ(rows.updates(0), 10u);
  EXPECT_EQ(rows.last_seen(0), 9);
  EXPECT_EQ(rows.exposure(1), 0u);
  EXPECT_EQ(rows.last_seen(1), -1);
}

TEST(EmbeddingRows, ExposureCountsOncePerStep) {
  EmbeddingRows rows(2, 1);
  rows.expose(1, 0);
  rows.expose(1, 0);
  rows.expose(1, 3);
  EXPECT_EQ(rows.exposure(1), 2u);
}

TEST(EmbeddingRows, TinyUpdatesDoNotCountAsUpdates) {
  EmbeddingRows rows(1, 2);
  const float tiny[2] = {1e-9f, 0};
  rows.record_update(0, tiny, 1.0);  // 1e-9 < 1e-6 x 1
  EXPECT_EQ(rows.updates(0), 0u);
  EXPECT_GT(rows.velocity(0), 0.f);
}

TEST(EmbeddingRows, SnrFromWeightedMeanAndVariance) {
  EmbeddingRows rows(2, 2);
  const float a[2] = {1, 0}, b[2] = {-1, 0};
  EXPECT_TRUE(std::isnan(rows.snr(0)));
  // Reference: Finch (2009) with a = 0.1, in double.
  double m = 1, s = 0;
  rows.record_gradient(0, a);
  for (int t = 1; t < 20; ++t) {
    const double x = t % 2 ? -1 : 1;
    rows.record_gradient(0, t % 2 ? b : a);
    const double diff = x - m, incr = 0.1 * diff;
    m += incr;
    s = 0.9 * (s + diff * incr);
  }
  EXPECT_NEAR(rows.snr(0), m * m / s, 1e-5);
  EXPECT_LT(rows.snr(0), 0.05);  // alternating sign: almost no signal
  for (int t = 0; t < 5; ++t) rows.record_gradient(1, a);
  EXPECT_TRUE(std::isinf(rows.snr(1)));  // a constant gradient is all signal
}

TEST(EmbeddingRows, ScaleFormulas) {
  EXPECT_DOUBLE_EQ(zombie_scale(1.0, 0.1, 1.0), 0.5);
  EXPECT_DOUBLE_EQ(zombie_scale(0.0, 0.1, 1.0), 0.1);
  EXPECT_DOUBLE_EQ(zombie_scale(NAN, 0.1, 1.0), 1.0);
  EXPECT_DOUBLE_EQ(zombie_scale(INFINITY, 0.1, 0.9), 0.9);
  EXPECT_DOUBLE_EQ(undertrained_boost(1.0, 2.0), 1.5);
  EXPECT_DOUBLE_EQ(undertrained_boost(NAN, 2.0), 1.0);
}

TEST(EmbeddingRows, BadOptionsThrow) {
  EXPECT_THROW(EmbeddingRows(-1, 4), Error);
  EXPECT_THROW(EmbeddingRows(4, 0), Error);
  EmbeddingRowsOptions o;
  o.velocity_ema = 1.0;
  EXPECT_THROW(EmbeddingRows(4, 2, o), Error);
}

// Feeds row `row` of `rows` a step of its own gradient and update, drawn from `rng`.
void feed_row(EmbeddingRows& rows, int64_t row, int step, std::mt19937& rng) {
  std::normal_distribution<float> n;
  std::vector<float> g(rows.dim()), d(rows.dim());
  for (auto& x : g) x = n(rng);
  for (auto& x : d) x = n(rng);
  rows.expose(row, step);
  rows.count_lookups(row, 1 + step % 3, step % 2);
  rows.record_gradient(row, g.data());
  rows.record_update(row, d.data(), 1.0);
}

// Each row's record is written only through its own row: rows fed side by side in one table
// end with the state of a one-row table fed the same, for widths that leave padding in the
// record (1, 3, 130) and one that does not (64 -> 464 bytes, padded to 512).
TEST(EmbeddingRows, NeighbouringRecordsStayApart) {
  for (int64_t dim : {1, 3, 64, 130}) {
    constexpr int64_t kRows = 5;
    EmbeddingRows table(kRows, dim);
    std::vector<EmbeddingRows> alone(kRows, EmbeddingRows(1, dim));
    for (int step = 0; step < 40; ++step)
      for (int64_t r = 0; r < kRows; ++r) {
        std::mt19937 a(static_cast<unsigned>(1000 * step + r)), b = a;
        feed_row(table, r, step, a);
        feed_row(alone[r], 0, step, b);
      }
    for (int64_t r = 0; r < kRows; ++r) {
      SCOPED_TRACE("dim " + std::to_string(dim) + " row " + std::to_string(r));
      EXPECT_EQ(table.exposure(r), alone[r].exposure(0));
      EXPECT_EQ(table.lookups(r), alone[r].lookups(0));
      EXPECT_EQ(table.negatives(r), alone[r].negatives(0));
      EXPECT_EQ(table.updates(r), alone[r].updates(0));
      EXPECT_EQ(table.cosines(r), alone[r].cosines(0));
      EXPECT_EQ(table.snr(r), alone[r].snr(0));
      EXPECT_EQ(table.velocity(r), alone[r].velocity(0));
      EXPECT_EQ(table.mean_cosine(r), alone[r].mean_cosine(0));
      EXPECT_EQ(table.windows(r).last_cosine, alone[r].windows(0).last_cosine);
      EXPECT_EQ(table.windows(r).last_step, alone[r].windows(0).last_step);
      EXPECT_EQ(table.short_windows(r).last_cosine, alone[r].short_windows(0).last_cosine);
      EXPECT_EQ(table.short_windows(r).prior_norm, alone[r].short_windows(0).prior_norm);
    }
  }
  EXPECT_EQ(EmbeddingRows::bytes_per_row(64), 512);  // 112 + 384 = 496 bytes
  EXPECT_EQ(EmbeddingRows::bytes_per_row(1), 128);  // 118 bytes, padded to two lines
  EXPECT_EQ(EmbeddingRows::bytes_per_row(3), 192);  // 130 bytes, three lines
}

// A copy (e.g. a vector of tables kept after training) holds the state, not a view of it.
TEST(EmbeddingRows, ACopyHoldsItsOwnState) {
  EmbeddingRows rows(3, 4);
  std::mt19937 rng(3);
  for (int step = 0; step < 5; ++step) feed_row(rows, 1, step, rng);
  const EmbeddingRows copy = rows;
  const double snr = rows.snr(1);
  feed_row(rows, 1, 5, rng);
  EXPECT_EQ(copy.exposure(1), 5u);
  EXPECT_EQ(copy.snr(1), snr);
  EXPECT_EQ(rows.exposure(1), 6u);
  EXPECT_EQ(copy.last_seen(0), -1);
}

// Bad input: a row outside the table is an Error naming it, from every entry point, and the
// state is left as it was (before, a row past the end wrote into the next allocation).
TEST(EmbeddingRows, RowsOutsideTheTableAreErrors) {
  EmbeddingRows rows(10, 2);
  const float v[2] = {1, 2};
  const int64_t rows_out[1] = {10};
  const std::string msg = "embedding rows: row 10 out of range [0, 10)";
  EXPECT_EQ(test::error_of([&] { rows.expose(10, 0); }), msg);
  EXPECT_EQ(test::error_of([&] { rows.count_lookups(10, 1, 0); }), msg);
  EXPECT_EQ(test::error_of([&] { rows.record_gradient(10, v); }), msg);
  EXPECT_EQ(test::error_of([&] { rows.record_update(10, v, 1.0); }), msg);
  EXPECT_EQ(test::error_of([&] { rows.record_gradients(rows_out, 1, v); }), msg);
  EXPECT_EQ(test::error_of([&] { rows.record_updates(rows_out, 1, v, v); }), msg);
  EXPECT_EQ(test::error_of([&] { (void)rows.exposure(10); }), msg);
  EXPECT_EQ(test::error_of([&] { (void)rows.snr(10); }), msg);
  EXPECT_EQ(test::error_of([&] { (void)rows.windows(-1); }),
            "embedding rows: row -1 out of range [0, 10)");
  EXPECT_EQ(test::error_of([&] { rows.expose(-1, 0); }),
            "embedding rows: row -1 out of range [0, 10)");
  for (int64_t r = 0; r < 10; ++r) EXPECT_EQ(rows.exposure(r), 0u);
  EmbeddingRows empty(0, 4);
  EXPECT_EQ(test::error_of([&] { empty.expose(0, 0); }),
            "embedding rows: row 0 out of range [0, 0)");
}

// Rows 0-2 alternate (zombies), 3-9 move steadily, 10-11 never exposed, 12 exposed but static.
EmbeddingRows planted_rows(int steps) {
  EmbeddingRows rows(13, 2);
  const float up[2] = {1, 0}, down[2] = {-1, 0}, steady[2] = {0, 0.5f}, none[2] = {0, 0};
  for (int t = 0; t < steps; ++t) {
    for (int r = 0; r < 10; ++r) {
      rows.expose(r, t);
      rows.count_lookups(r, 1, 0);
      rows.record_update(r, r < 3 ? (t % 2 ? down : up) : steady, 1.0);
    }
    rows.expose(12, t);
    rows.count_lookups(12, 1, 0);
    rows.record_update(12, none, 1.0);
  }
  return rows;
}

TEST(EmbeddingRules, PlantedZombiesAndDeadRowsGradTracerRule) {
  const EmbeddingRows rows = planted_rows(12);
  EmbeddingRuleOptions o;
  o.zombie_rule = ZombieRule::kGradTracer;
  const EmbeddingReport rep = diagnose_embedding("items", rows, 12, o);
  EXPECT_EQ(rep.stats.zombie_rows, 3);
  EXPECT_EQ(rep.stats.never_exposed_rows, 2);
  EXPECT_EQ(rep.stats.never_updated_rows, 1);
  EXPECT_EQ(rep.stats.exposed_rows, 11);
  EXPECT_NEAR(rep.stats.active_coverage_pct, 100.0 * 11 / 13, 1e-12);
  EXPECT_DOUBLE_EQ(rep.stats.popularity_gini, 0.0);
  ASSERT_GE(rep.diagnostics.size(), 2u);
  EXPECT_EQ(rep.diagnostics[0].type, "ZOMBIE_ROWS");
  EXPECT_EQ(rep.diagnostics[0].example_rows, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(rep.diagnostics[0].confidence, 1.0);  // oscillation ~ -0.9, far past -0.375
  EXPECT_EQ(rep.diagnostics[1].type, "DEAD_ROWS");
  EXPECT_EQ(rep.diagnostics[1].example_rows, (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(rep.stats.lowest_saliency_rows.front(), 12);
}

TEST(EmbeddingRules, PlantedZombiesAndDeadRowsWindowedRule) {
  // 4 updates (3 cosines) are fewer than even two short windows of 2: no verdict yet.
  const EmbeddingStats earliest = diagnose_embedding("items", planted_rows(4), 4, EmbeddingRuleOptions{}).stats;
  EXPECT_EQ(earliest.zombie_rows_judged, 0);
  EXPECT_EQ(earliest.zombie_rows_unjudged, 10);  // rows 0-9 moved 4 times; row 12 never really
  // 12 updates: two short windows of 2 cosines, too few for the long ones; in 2 dimensions a
  // window of 2 random cosines has sd 1 / sqrt(4), 3 of them is -1.5: nothing can pass.
  const EmbeddingReport early = diagnose_embedding("items", planted_rows(12), 12, EmbeddingRuleOptions{});
  EXPECT_EQ(early.stats.zombie_rows_judged, 10);
  EXPECT_EQ(early.stats.zombie_rows_judged_short, 10);
  EXPECT_EQ(early.stats.zombie_rows_unjudged, 0);
  EXPECT_EQ(early.stats.zombie_rows, 0);
  const EmbeddingReport rep = diagnose_embedding("items", planted_rows(33), 33, EmbeddingRuleOptions{});
  EXPECT_EQ(rep.stats.zombie_rows_judged, 10);  // 32 cosines each: two windows
  EXPECT_EQ(rep.stats.zombie_rows_unjudged, 0);
  EXPECT_EQ(rep.stats.zombie_rows, 3);
  EXPECT_DOUBLE_EQ(rep.stats.zombie_mean_cosine, -1.0);
  ASSERT_GE(rep.diagnostics.size(), 2u);
  EXPECT_EQ(rep.diagnostics[0].type, "ZOMBIE_ROWS");
  EXPECT_EQ(rep.diagnostics[0].example_rows, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(rep.diagnostics[0].rows, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(rep.stats.zombie_rows_judged_short, 0);
  // 10 rows are too few to estimate the null: random directions, the two windows taken as one.
  // Chance flags 10 rows x Phi(-0.53 x sqrt(32)) = 10 x Phi(-3) = 0.0135 -> 1 - 0.0135 / 3.
  EXPECT_NEAR(rep.diagnostics[0].confidence, 1.0 - 10 * 0.0013498980316301 / 3, 1e-9);
  EXPECT_EQ(rep.diagnostics[1].type, "DEAD_ROWS");
}

// Rows 0-3 reverse every update for 33 updates (two complete windows of 16 cosines), then rows
// 0-1 keep reversing while rows 2-3 move one way for `after` more updates; rows 4-9 move
// steadily throughout. A zombie is a row that still reverses now.
EmbeddingRows stopping_rows(int after) {
  EmbeddingRows rows(10, 2);
  const float up[2] = {1, 0}, down[2] = {-1, 0}, steady[2] = {0, 0.5f};
  for (int t = 0; t < 33 + after; ++t)
    for (int r = 0; r < 10; ++r) {
      rows.expose(r, t);
      rows.count_lookups(r, 1, 0);
      const bool reversing = r < 2 || (r < 4 && t < 33);
      rows.record_update(r, reversing ? (t % 2 ? down : up) : r < 4 ? up : steady, 1.0);
    }
  return rows;
}

TEST(EmbeddingRules, ARowThatStoppedReversingIsNotAZombieNow) {
  // Seven updates after the windows (under half a window): the windows still decide.
  EmbeddingReport rep = diagnose_embedding("items", stopping_rows(7), 40, EmbeddingRuleOptions{});
  EXPECT_EQ(rep.stats.zombie_rows, 4);
  EXPECT_EQ(rep.stats.zombie_rows_stopped, 0);
  // Eight and more (half a window) with a positive mean cosine: rows 2-3 stopped.
  for (const int after : {8, 15}) {
    SCOPED_TRACE(after);
    rep = diagnose_embedding("items", stopping_rows(after), 33 + after, EmbeddingRuleOptions{});
    EXPECT_EQ(rep.stats.zombie_rows_judged, 10);
    EXPECT_EQ(rep.stats.zombie_rows, 2);
    EXPECT_EQ(rep.stats.zombie_rows_stopped, 2);
    ASSERT_FALSE(rep.diagnostics.empty());
    EXPECT_EQ(rep.diagnostics[0].type, "ZOMBIE_ROWS");
    EXPECT_EQ(rep.diagnostics[0].example_rows, (std::vector<int64_t>{0, 1}));
    // The 33rd update, at step 32, completed the second (last oscillating) window.
    EXPECT_EQ(rep.stats.zombie_stopped_step, 32);
    EXPECT_EQ(rep.stats.zombie_stopped_rows, (std::vector<int64_t>{2, 3}));
    EXPECT_THAT(rep.diagnostics[0].premise,
                ::testing::HasSubstr("2 more rows oscillated so, over at least their two last windows, but stopped "
                                     "since (their last oscillating window ended at step 32, median): not flagged"));
  }
  // After 16 more, the stop is itself a complete window above the threshold.
  rep = diagnose_embedding("items", stopping_rows(16), 49, EmbeddingRuleOptions{});
  EXPECT_EQ(rep.stats.zombie_rows, 2);
  EXPECT_EQ(rep.stats.zombie_rows_stopped, 0);
}

TEST(EmbeddingRules, PopularityBiasConfidenceRamps) {
  EmbeddingRows rows(10, 1);
  for (int t = 0; t < 200; ++t) rows.expose(0, t), rows.count_lookups(0, 1, 0);
  for (int r = 1; r < 10; ++r) rows.expose(r, 0), rows.count_lookups(r, 1, 0);
  const EmbeddingReport rep = diagnose_embedding("t", rows, 200, EmbeddingRuleOptions{});
  ASSERT_FALSE(rep.diagnostics.empty());
  const auto& d = rep.diagnostics.back();
  EXPECT_EQ(d.type, "POPULARITY_BIAS");
  const double g = rep.stats.lookup_gini;  // > 0.85 (the 25%-stricter threshold)
  EXPECT_DOUBLE_EQ(g, rep.stats.popularity_gini);  // one lookup a step: both counts agree
  EXPECT_GT(g, 0.85);
  EXPECT_DOUBLE_EQ(d.confidence, 1.0);
}


// The short windows: windows of zombie_window / 8 cosines, kept beside the long ones. A row in
// the plane turned by angle a_t at update t has cos(Delta_t, Delta_t-1) = cos(a_t) exactly.
TEST(EmbeddingRows, ShortWindowsAreMeansOfAnEighthOfTheWindowOfCosines) {
  EXPECT_EQ(zombie_short_window(16), 2);
  EXPECT_EQ(zombie_short_window(64), 8);
  EXPECT_EQ(zombie_short_window(15), 1);
  EXPECT_EQ(zombie_short_window(2), 1);
  EmbeddingRows rows(1, 2);
  std::vector<double> cosines;
  double angle = 0;
  for (int t = 0; t < 16; ++t) {  // 16 updates: 15 cosines, seven short windows and 1 over
    const double turn = 0.2 * t;
    if (t > 0) cosines.push_back(std::cos(turn));
    angle += t > 0 ? turn : 0;
    const float d[2] = {static_cast<float>(std::cos(angle)), static_cast<float>(std::sin(angle))};
    rows.expose(0, 10 + t);
    rows.record_update(0, d, 1.0);
  }
  const auto mean = [&](int from, int n) {
    double s = 0;
    for (int i = from; i < from + n; ++i) s += cosines[static_cast<std::size_t>(i)];
    return s / n;
  };
  const ZombieWindows w = rows.short_windows(0);
  EXPECT_EQ(w.completed, 2);
  EXPECT_NEAR(w.prior_cosine, mean(10, 2), 2e-3);  // bfloat16 previous update: 3 digits
  EXPECT_NEAR(w.last_cosine, mean(12, 2), 2e-3);
  EXPECT_EQ(w.current_updates, 1);
  EXPECT_NEAR(w.current_cosine, mean(14, 1), 2e-3);
  EXPECT_NEAR(w.last_norm, 1.0, 1e-6);
  EXPECT_EQ(rows.windows(0).completed, 0);  // 15 cosines: no long window yet
  EXPECT_EQ(rows.windows(0).last_step, -1);
}

}  // namespace
}  // namespace gradscope
