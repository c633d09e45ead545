// The embedding verdicts on planted rows and healthy controls, each checked against a ground
// truth the test computes itself: the windowed zombie rule, the negative-sampler skew and the
// per-lookup popularity.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "gradscope/core/embedding/math.h"
#include "gradscope/core/embedding/report.h"
#include "gradscope/core/error.h"

namespace gradscope {
namespace {

const EmbeddingDiagnostic* find(const EmbeddingReport& r, const std::string& type) {
  for (const auto& d : r.diagnostics)
    if (d.type == type) return &d;
  return nullptr;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (std::size_t j = 0; j < a.size(); ++j) ab += double(a[j]) * b[j], aa += double(a[j]) * a[j], bb += double(b[j]) * b[j];
  return ab / std::sqrt(aa * bb);
}

// Feeds `updates` to `row` (each row norm 1, so every update counts as real).
void feed(EmbeddingRows& rows, int64_t row, const std::vector<std::vector<float>>& updates, int64_t first_step = 0) {
  for (std::size_t t = 0; t < updates.size(); ++t) {
    rows.expose(row, first_step + static_cast<int64_t>(t));
    rows.count_lookups(row, 1, 0);
    rows.record_update(row, updates[t].data(), 1.0);
  }
}

std::vector<std::vector<float>> random_directions(std::mt19937& rng, int n, int dim) {
  std::normal_distribution<float> g(0.f, 1.f);
  std::vector<std::vector<float>> out(n, std::vector<float>(dim));
  for (auto& u : out)
    for (float& x : u) x = g(rng);
  return out;
}

double norm_of(const std::vector<float>& x) {
  double s = 0;
  for (float y : x) s += double(y) * y;
  return std::sqrt(s);
}

// `value` at `index` of a vector of `dim` zeros.
std::vector<float> axis(int dim, int index, float value) {
  std::vector<float> v(dim, 0.f);
  v[index] = value;
  return v;
}

TEST(ZombieWindows, MatchAnIndependentComputationOfConsecutiveCosines) {
  // Small integers are exact in bfloat16, the precision the previous update is kept in.
  std::mt19937 rng(3);
  std::uniform_int_distribution<int> magnitude(1, 8), sign(0, 1);
  constexpr int kDim = 8, kUpdates = 45;
  std::vector<std::vector<float>> u(kUpdates, std::vector<float>(kDim));
  for (auto& x : u)
    for (float& y : x) y = static_cast<float>(sign(rng) ? magnitude(rng) : -magnitude(rng));
  EmbeddingRows rows(1, kDim);
  feed(rows, 0, u);
  std::vector<double> cos, norm;
  for (int t = 1; t < kUpdates; ++t) cos.push_back(cosine(u[t], u[t - 1])), norm.push_back(norm_of(u[t]));
  const auto mean = [](const std::vector<double>& x, int from, int n) {
    double s = 0;
    for (int i = from; i < from + n; ++i) s += x[i];
    return s / n;
  };
  // 44 cosines: windows [0, 16) and [16, 32) are complete, [32, 44) is being filled.
  const ZombieWindows w = rows.windows(0);
  EXPECT_EQ(w.completed, 2);
  EXPECT_NEAR(w.prior_cosine, mean(cos, 0, 16), 1e-5);
  EXPECT_NEAR(w.last_cosine, mean(cos, 16, 16), 1e-5);
  EXPECT_NEAR(w.prior_norm, mean(norm, 0, 16), 1e-4);
  EXPECT_NEAR(w.last_norm, mean(norm, 16, 16), 1e-4);
  EXPECT_EQ(rows.cosines(0), 44u);
  EXPECT_NEAR(rows.mean_cosine(0), mean(cos, 0, 44), 1e-6);
  EXPECT_TRUE(std::isnan(EmbeddingRows(1, 2).mean_cosine(0)));
}

TEST(ZombieRule, IndependentDirectionsAreNotFlaggedWhereGradTracersRuleFlagsThem) {
  // Healthy noise: each update an independent direction. In 2 dimensions the oscillation EMA
  // (weight 0.2) of such cosines has sd ~0.24, so GradTracer's -0.3 catches about a tenth of
  // the rows at any moment (417 of 4,000 here, docs/embedding.md); the windowed rule's chance
  // is Phi(-3)^2 per row.
  std::mt19937 rng(11);
  constexpr int kRows = 4000, kDim = 2, kUpdates = 40;
  EmbeddingRows rows(kRows, kDim);
  for (int r = 0; r < kRows; ++r) feed(rows, r, random_directions(rng, kUpdates, kDim));
  const EmbeddingReport windowed = diagnose_embedding("t", rows, kUpdates, EmbeddingRuleOptions{});
  EXPECT_EQ(windowed.stats.zombie_rows_judged, kRows);
  EXPECT_EQ(windowed.stats.zombie_rows, 0);
  EXPECT_EQ(find(windowed, "ZOMBIE_ROWS"), nullptr);
  EmbeddingRuleOptions gt;
  gt.zombie_rule = ZombieRule::kGradTracer;
  const EmbeddingReport old = diagnose_embedding("t", rows, kUpdates, gt);
  EXPECT_GT(old.stats.zombie_rows, kRows / 40) << "GradTracer's rule no longer flags noise: the comparison is moot";
  ASSERT_NE(find(old, "ZOMBIE_ROWS"), nullptr);
  EXPECT_NEAR(old.stats.zombie_mean_cosine, 0.0, 0.1) << "the rows it flags do not flip over the run";
}

TEST(ZombieRule, ARecentBurstIsNotAZombieButLastingFlipsAre) {
  constexpr int kDim = 16;
  const std::vector<float> a = axis(kDim, 0, 1), minus_a = axis(kDim, 0, -1), b = axis(kDim, 1, 1);
  EmbeddingRows rows(3, kDim);
  // Row 0: 60 orthogonal updates (cosine 0), then three that flip: GradTracer's EMA falls to
  // -(1 - 0.8^3) = -0.49, past -0.3, though the row flipped only at the very end.
  std::vector<std::vector<float>> burst, flips, settled;
  for (int t = 0; t < 60; ++t) burst.push_back(t % 2 ? a : b);
  for (const auto& x : {a, minus_a, a, minus_a}) burst.push_back(x);
  // Row 1: flips every update for 40 updates. Row 2: flips 40 times, then moves steadily.
  for (int t = 0; t < 40; ++t) flips.push_back(t % 2 ? minus_a : a);
  settled = flips;
  for (int t = 0; t < 40; ++t) settled.push_back(a);
  feed(rows, 0, burst);
  feed(rows, 1, flips);
  feed(rows, 2, settled);
  EXPECT_LT(rows.oscillation(0), -0.3) << "the burst should fool the EMA";
  EXPECT_TRUE(is_zombie(rows, 0, 0.0, Thresholds{}));
  EXPECT_FALSE(is_windowed_zombie(rows, 0, Thresholds{}));
  EXPECT_TRUE(is_windowed_zombie(rows, 1, Thresholds{}));
  EXPECT_FALSE(is_windowed_zombie(rows, 2, Thresholds{}));
  EXPECT_NEAR(rows.mean_cosine(1), -1.0, 1e-6);
  EXPECT_NEAR(zombie_z_score(rows, 1, Thresholds{}), std::sqrt(16.0 * 16.0), 1e-4);  // 1 x sqrt(dim x window)
}

TEST(ZombieRule, ADampedOscillationConvergesAndIsNotAZombie) {
  constexpr int kDim = 4;
  EmbeddingRows rows(2, kDim);
  for (int r = 0; r < 2; ++r) {
    const double factor = r == 0 ? 0.9 : 1.0;  // row 0 shrinks by 0.9 an update: 0.18x a window
    double size = 1;
    std::vector<std::vector<float>> u;
    for (int t = 0; t < 40; ++t, size *= factor) u.push_back({float(t % 2 ? -size : size), 0, 0, 0});
    feed(rows, r, u);
  }
  EXPECT_FALSE(is_windowed_zombie(rows, 0, Thresholds{}));
  EXPECT_TRUE(is_windowed_zombie(rows, 1, Thresholds{}));
  const ZombieWindows w = rows.windows(0);
  EXPECT_NEAR(w.last_norm / w.prior_norm, std::pow(0.9, 16), 1e-3);
}

TEST(ZombieRule, OneDimensionalTablesAndBadWindows) {
  // dim 1: cosines are +-1, chance sd 1; the threshold is -3 / sqrt(16) = -0.75.
  EXPECT_DOUBLE_EQ(zombie_cosine_threshold(Thresholds{}, 1), -0.75);
  EXPECT_DOUBLE_EQ(zombie_cosine_threshold(Thresholds{}, 64), -0.3);  // the effect floor
  EmbeddingRows rows(2, 1);
  std::vector<std::vector<float>> flips, signs;
  std::mt19937 rng(5);
  for (int t = 0; t < 40; ++t) flips.push_back({t % 2 ? -1.f : 1.f}), signs.push_back({rng() % 2 ? -1.f : 1.f});
  feed(rows, 0, flips);
  feed(rows, 1, signs);
  EXPECT_TRUE(is_windowed_zombie(rows, 0, Thresholds{}));
  EXPECT_FALSE(is_windowed_zombie(rows, 1, Thresholds{}));
  EmbeddingRowsOptions o;
  o.zombie_window = 0;
  EXPECT_THROW(EmbeddingRows(2, 2, o), Error);
  Thresholds t;
  t.zombie_window = 0;
  EXPECT_THROW(t.validate(), Error);
}

TEST(BinomialDeviation, MatchesTheSumOverTheDistribution) {
  for (const auto& [n, p] : std::vector<std::pair<int, double>>{{1, 0.5}, {7, 0.3}, {50, 0.02}, {200, 0.5}, {999, 0.001}}) {
    double brute = 0;
    for (int k = 0; k <= n; ++k)
      brute += std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0) + k * std::log(p) +
                        (n - k) * std::log1p(-p)) *
               std::fabs(k - n * p);
    EXPECT_NEAR(binomial_mean_absolute_deviation(n, p), brute, 1e-9 * std::max(1.0, brute)) << n << " " << p;
  }
  EXPECT_EQ(binomial_mean_absolute_deviation(10, 0.0), 0.0);
  EXPECT_EQ(binomial_mean_absolute_deviation(10, 1.0), 0.0);
  EXPECT_THROW(binomial_mean_absolute_deviation(-1, 0.5), Error);
}

// A table of `rows` rows: positives drawn from a long tail, negatives from `negative`.
template <class Draw>
EmbeddingRows sampled_table(int rows, int steps, int batch, Draw negative, uint32_t seed) {
  EmbeddingRows t(rows, 4);
  std::mt19937 rng(seed);
  std::vector<double> w(rows);
  for (int r = 0; r < rows; ++r) w[r] = 1.0 / (1 + r);
  std::discrete_distribution<int> tail(w.begin(), w.end());
  for (int s = 0; s < steps; ++s)
    for (int b = 0; b < batch; ++b) {
      const int pos = tail(rng), neg = negative(rng);
      t.expose(pos, s), t.count_lookups(pos, 1, 0);
      t.expose(neg, s), t.count_lookups(neg, 1, 1);
    }
  return t;
}

// The mean TV of `trials` correct uniform samplers of `n` draws over `rows` rows, simulated.
double simulated_uniform_tv(int rows, int n, int trials) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<int> u(0, rows - 1);
  double sum = 0;
  for (int k = 0; k < trials; ++k) {
    std::vector<int> c(rows);
    for (int i = 0; i < n; ++i) ++c[u(rng)];
    double tv = 0;
    for (int r = 0; r < rows; ++r) tv += std::fabs(c[r] / double(n) - 1.0 / rows);
    sum += tv / 2;
  }
  return sum / trials;
}

TEST(SamplerSkew, AUniformSamplerIsWithinChanceAndTheChanceMatchesSimulation) {
  constexpr int kRows = 500, kSteps = 40, kBatch = 100;
  std::uniform_int_distribution<int> uniform(0, kRows - 1);
  const EmbeddingRows t = sampled_table(kRows, kSteps, kBatch, [&](std::mt19937& g) { return uniform(g); }, 1);
  const SamplerSkew k = negative_sampler_skew(t, NegativeSampler{});
  EXPECT_EQ(k.negatives, kSteps * kBatch);
  EXPECT_NEAR(k.tv_chance, simulated_uniform_tv(kRows, kSteps * kBatch, 200), 0.01);
  EXPECT_NEAR(k.tv, k.tv_chance, 0.03);
  const EmbeddingReport rep = diagnose_embedding("items", t, kSteps, EmbeddingRuleOptions{});
  EXPECT_EQ(find(rep, "NEGATIVE_SAMPLER_SKEW"), nullptr);
  EXPECT_DOUBLE_EQ(rep.stats.sampler_tv, k.tv);
}

TEST(SamplerSkew, NegativesFromTheTwentyMostPopularRowsAreFlagged) {
  constexpr int kRows = 2000;
  std::uniform_int_distribution<int> top20(0, 19);  // rows 0-19 are the tail's most popular
  const EmbeddingRows t = sampled_table(kRows, 40, 100, [&](std::mt19937& g) { return top20(g); }, 2);
  const EmbeddingReport rep = diagnose_embedding("items", t, 40, EmbeddingRuleOptions{});
  const EmbeddingDiagnostic* d = find(rep, "NEGATIVE_SAMPLER_SKEW");
  ASSERT_NE(d, nullptr);
  EXPECT_NEAR(rep.stats.sampler_tv, 1.0 - 20.0 / kRows, 0.01);  // all mass on 1% of the rows
  EXPECT_DOUBLE_EQ(d->confidence, 1.0);
  ASSERT_EQ(d->example_rows.size(), 10u);
  for (int64_t r : d->example_rows) EXPECT_LT(r, 20);
}

TEST(SamplerSkew, APopularitySamplerIsFineWhenDeclaredAndSkewedWhenUniformIsDeclared) {
  constexpr int kRows = 1000;
  std::vector<double> w(kRows);
  for (int r = 0; r < kRows; ++r) w[r] = std::pow(1.0 / (1 + r), 0.75);  // ~ positives^0.75
  std::discrete_distribution<int> pop(w.begin(), w.end());
  const EmbeddingRows t = sampled_table(kRows, 100, 200, [&](std::mt19937& g) { return pop(g); }, 4);
  EmbeddingRuleOptions declared;
  declared.negative_sampler.kind = NegativeSampler::Kind::kPopularity;
  const EmbeddingReport ok = diagnose_embedding("items", t, 100, declared);
  EXPECT_EQ(find(ok, "NEGATIVE_SAMPLER_SKEW"), nullptr) << "tv " << ok.stats.sampler_tv << " chance "
                                                        << ok.stats.sampler_tv_chance;
  const EmbeddingReport wrong = diagnose_embedding("items", t, 100, EmbeddingRuleOptions{});
  EXPECT_NE(find(wrong, "NEGATIVE_SAMPLER_SKEW"), nullptr) << "tv " << wrong.stats.sampler_tv;
}

TEST(SamplerSkew, NoNegativesOrNoPositivesIsNotJudged) {
  EmbeddingRows t(10, 2);
  EXPECT_EQ(negative_sampler_skew(t, NegativeSampler{}).not_judged.rfind("no negatives marked", 0), 0u);
  for (int r = 0; r < 10; ++r) t.count_lookups(r, 3, 3);  // a table looked up only as negatives
  EXPECT_TRUE(std::isnan(negative_sampler_skew(t, NegativeSampler{NegativeSampler::Kind::kPopularity}).tv));
  EXPECT_FALSE(std::isnan(negative_sampler_skew(t, NegativeSampler{}).tv));
  EXPECT_NEAR(negative_sampler_skew(t, NegativeSampler{}).tv, 0.0, 1e-12);
}

TEST(PopularityBias, CountsEveryLookupNotOnlyOnePerStep) {
  // Every step holds the same 20 popular rows many times (a sampler drawing from them) and
  // each long-tail row once: per step they look alike, per lookup the 20 dominate.
  constexpr int kRows = 400;
  EmbeddingRows t(kRows, 2);
  std::vector<double> per_step(kRows), per_lookup(kRows);
  for (int s = 0; s < 50; ++s)
    for (int r = 0; r < kRows; ++r) {
      const bool popular = r < 20;
      if (!popular && (r + s) % 8 != 0) continue;
      const uint32_t n = popular ? 60 : 1;
      t.expose(r, s), t.count_lookups(r, n, 0);
      per_step[r] += 1, per_lookup[r] += n;
    }
  const EmbeddingReport rep = diagnose_embedding("items", t, 50, EmbeddingRuleOptions{});
  EXPECT_NEAR(rep.stats.popularity_gini, gini(per_step), 1e-12);
  EXPECT_NEAR(rep.stats.lookup_gini, gini(per_lookup), 1e-12);
  EXPECT_LT(rep.stats.popularity_gini, 0.8);
  EXPECT_GT(rep.stats.lookup_gini, 0.8);
  EXPECT_NE(find(rep, "POPULARITY_BIAS"), nullptr);
  EXPECT_EQ(rep.stats.lookups, int64_t(50) * 20 * 60 + 50 * 380 / 8);
}

}  // namespace
}  // namespace gradscope
