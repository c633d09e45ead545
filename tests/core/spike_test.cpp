// The per-step series rules (core/series): the band against a mean and deviation computed here
// from the raw window, LOSS_SPIKE, DIVERGENCE and GRADIENT_SPIKE on planted series, and healthy
// noisy series that must stay quiet.
#include "gradscope/core/series/band.h"
#include "gradscope/core/series/rules.h"
#include "gradscope/core/audit/rules.h"
#include "gradscope/core/findings/findings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <random>

#include "../common/grad_record.h"
#include "gradscope/core/error.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;

TEST(RecentBand, MeanAndDeviationMatchTheWindowComputedHere) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(0, 1);
  RecentBand band(16);
  std::deque<double> window;
  for (int i = 0; i < 200; ++i) {
    // Far from zero and drifting: the shifted sums must keep the variance exact.
    const double x = 1e6 + 0.01 * i + noise(rng);
    const BandTest t = band.test(x, 6, 1);
    if (!window.empty()) {
      double mean = 0;
      for (double v : window) mean += v;
      mean /= static_cast<double>(window.size());
      double var = 0;
      for (double v : window) var += (v - mean) * (v - mean);
      var /= static_cast<double>(window.size());
      ASSERT_EQ(t.history, static_cast<int64_t>(window.size()));
      ASSERT_NEAR(t.mean, mean, 1e-6) << i;
      ASSERT_NEAR(t.sd, std::sqrt(var), 1e-5) << i;
    }
    band.push(x);
    window.push_back(x);
    if (window.size() > 16) window.pop_front();
  }
}

TEST(RecentBand, NeedsItsHistoryAndIgnoresNonFiniteValues) {
  RecentBand band(8);
  for (int i = 0; i < 3; ++i) band.push(1.0 + 0.01 * i);
  EXPECT_FALSE(band.test(100, 6, 4).above);  // 3 values: not enough history
  band.push(std::nan(""));
  band.push(INFINITY);
  EXPECT_EQ(band.size(), 3);
  band.push(1.02);
  EXPECT_TRUE(band.test(100, 6, 4).above);
  EXPECT_FALSE(band.test(1.03, 6, 4).above);
  EXPECT_FALSE(band.test(INFINITY, 6, 4).above);  // its own finding, not a spike
}

TEST(RecentBand, AFlatSeriesIsWidenedSoRoundingIsNoSpike) {
  RecentBand band(32);
  for (int i = 0; i < 32; ++i) band.push(2.5);
  EXPECT_FALSE(band.test(2.5 * (1 + 1e-6), 6, 16).above);
  EXPECT_TRUE(band.test(2.6, 6, 16).above);
  RecentBand zeros(8);
  for (int i = 0; i < 8; ++i) zeros.push(0);
  EXPECT_TRUE(zeros.test(1e-9, 6, 4).above);
  EXPECT_FALSE(zeros.test(0, 6, 4).above);
  EXPECT_THROW(RecentBand(1), Error);
}

// Values whose squares (or sums) overflow double: running sums of squares made the sd of a band
// holding -1e200 NaN, read as 0, and every later ordinary value a spike. The band must stay
// finite and exact, and be the plain window's again once the far value has left it.
TEST(RecentBand, ValuesFarApartKeepTheBandFiniteAndExact) {
  RecentBand band(16);
  for (int i = 0; i < 15; ++i) band.push(2.0 + 0.01 * (i % 3));
  band.push(-1e200);
  const BandTest t = band.test(2.01, 6, 8);
  // Computed here: 15 values near 2 and one of -1e200 (the small ones vanish beside it).
  EXPECT_DOUBLE_EQ(t.mean, -1e200 / 16);
  EXPECT_NEAR(t.sd, std::sqrt(15.0) / 16 * 1e200, 1e186);
  EXPECT_FALSE(t.above);
  // 16 more values: the far one left the window, and the band is the plain one of these 16.
  std::vector<double> window;
  for (int i = 0; i < 16; ++i) {
    const double x = 2.0 + 0.01 * (i % 4);
    band.push(x);
    window.push_back(x);
  }
  double mean = 0, sq = 0;
  for (double v : window) mean += v;
  mean /= 16;
  for (double v : window) sq += (v - mean) * (v - mean);
  const BandTest back = band.test(2.02, 6, 8);
  EXPECT_NEAR(back.mean, mean, 1e-12);
  EXPECT_NEAR(back.sd, std::sqrt(sq / 16), 1e-12);
  EXPECT_FALSE(back.above);
  EXPECT_TRUE(band.test(2.5, 6, 8).above);
  // At the ends of double's range: sums and squares would overflow; the band does not.
  RecentBand edges(4);
  for (double v : {1e308, -1e308, 1.7e308, -1.7e308}) edges.push(v);
  const BandTest e = edges.test(0, 6, 2);
  EXPECT_TRUE(std::isfinite(e.mean) && std::isfinite(e.sd));
  EXPECT_NEAR(e.mean, 0, 1e293);
  EXPECT_NEAR(e.sd, std::sqrt((1 + 1 + 1.7 * 1.7 + 1.7 * 1.7) / 4) * 1e308, 1e296);
}

// A noisy decreasing loss, like a mini-batch training curve.
std::vector<double> healthy_loss(int steps, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(0, 1);
  std::vector<double> loss;
  for (int i = 0; i < steps; ++i) loss.push_back(0.3 + 2.0 * std::exp(-i / 80.0) + 0.05 * noise(rng));
  return loss;
}

SeriesReport judge_losses(const std::vector<double>& loss, Thresholds t = {}) {
  SeriesTracker s(t);
  for (std::size_t i = 0; i < loss.size(); ++i) s.add({static_cast<int64_t>(i), kLossSeries, loss[i]});
  return s.finish();
}

TEST(SeriesRules, AHealthyNoisyLossHasNoSpikeAndNoDivergence) {
  for (unsigned seed = 0; seed < 5; ++seed) {
    const SeriesReport r = judge_losses(healthy_loss(1000, seed));
    EXPECT_EQ(r.spike_count, 0) << seed;
    EXPECT_FALSE(r.diverged()) << seed;
    EXPECT_EQ(r.loss_steps, 1000);
    EXPECT_EQ(r.first_loss_step, 0);
  }
}

TEST(SeriesRules, APlantedSpikeIsFoundAtItsStepWithItsSize) {
  std::vector<double> loss = healthy_loss(600, 3);
  loss[400] += 1.5;  // one bad batch
  const SeriesReport r = judge_losses(loss);
  ASSERT_EQ(r.spike_count, 1);
  EXPECT_EQ(r.spikes[0].step, 400);
  EXPECT_FALSE(r.diverged());
  // The band is the 128 losses before it, computed here.
  double mean = 0, sq = 0;
  for (int i = 272; i < 400; ++i) mean += loss[static_cast<std::size_t>(i)];
  mean /= 128;
  for (int i = 272; i < 400; ++i) sq += (loss[static_cast<std::size_t>(i)] - mean) * (loss[static_cast<std::size_t>(i)] - mean);
  const double sd = std::sqrt(sq / 128);
  EXPECT_NEAR(r.spikes[0].band_mean, mean, 1e-9);
  EXPECT_NEAR(r.spikes[0].band_sd, sd, 1e-9);
  EXPECT_NEAR(r.spikes[0].z, (loss[400] - mean) / sd, 1e-6);
  EXPECT_EQ(r.onset(), 400);
}

TEST(SeriesRules, TheEarlyMaximumRuleCatchesASpikeBeforeTheBandHasHistory) {
  std::vector<double> loss = {2.3, 2.2, 2.25, 2.1, 40.0, 2.0, 1.9};
  const SeriesReport r = judge_losses(loss);
  ASSERT_EQ(r.spike_count, 1);
  EXPECT_EQ(r.spikes[0].step, 4);
  EXPECT_TRUE(r.spikes[0].early_rule);
  EXPECT_DOUBLE_EQ(r.spikes[0].early_max, 2.3);
  EXPECT_FALSE(r.diverged());  // it came back
}

TEST(SeriesRules, ALossThatLeavesAndStaysOutIsADivergenceFromItsOnset) {
  // Blow-up at step 3, as an LSTM at a too-high learning rate without clipping does.
  std::vector<double> loss = {8.1, 8.0, 7.9, 12.0, 25.0, 40.0};
  for (int i = 0; i < 30; ++i) loss.push_back(60.0 + (i % 3));
  const SeriesReport r = judge_losses(loss);
  ASSERT_TRUE(r.diverged());
  EXPECT_EQ(r.divergence_step, 3);
  EXPECT_FALSE(r.divergence_nonfinite);
  EXPECT_DOUBLE_EQ(r.divergence_value, 12.0);
  EXPECT_DOUBLE_EQ(r.divergence_level, 8.1);
  EXPECT_EQ(r.spike_count, 0);  // the spike at the onset is the divergence
  // What began after the onset is its effect; the onset itself and what came before are not.
  EXPECT_FALSE(r.follows_divergence(2));
  EXPECT_FALSE(r.follows_divergence(3));
  EXPECT_TRUE(r.follows_divergence(4));
  EXPECT_FALSE(judge_losses({3.0, 2.9, 2.8}).follows_divergence(100));  // no divergence, no effect
}

TEST(SeriesRules, ALossThatStartsAHairBelowItsPlateauIsNoDivergence) {
  // A CNN on the digits (Adam 1e-3), its first 30 losses as measured: the first, 2.280, a hair
  // below the plateau at log(10) = 2.303 it then sits on for 60 steps before it falls. The
  // highest of one loss is no band: no DIVERGENCE.
  const std::vector<double> first = {2.2800, 2.3028, 2.2974, 2.2879, 2.3018, 2.3161, 2.2883, 2.3096, 2.3097, 2.2969,
                                     2.3127, 2.3102, 2.2949, 2.2974, 2.3178, 2.2893, 2.2812, 2.2912, 2.3271, 2.3140,
                                     2.3155, 2.3176, 2.2957, 2.2829, 2.2989, 2.2857, 2.3018, 2.3240, 2.3068, 2.2873};
  SeriesTracker s;
  int64_t step = 0;
  for (double v : first) s.add({step++, kLossSeries, v});
  for (; step < 60; ++step) s.add({step, kLossSeries, 2.29 + 0.01 * std::sin(static_cast<double>(step))});
  for (; step < 250; ++step) s.add({step, kLossSeries, 2.29 - 0.8 * static_cast<double>(step - 60) / 190});
  EXPECT_FALSE(s.finish().diverged()) << s.finish().divergence_step;
  // A real early blow-up still is one, from its step: 20% above at step 2, and staying.
  SeriesTracker b;
  for (int64_t i = 0; i < 40; ++i) b.add({i, kLossSeries, i < 2 ? 2.30 : 2.30 * 1.2 + 0.01 * static_cast<double>(i)});
  EXPECT_EQ(b.finish().divergence_step, 2);
  // 9% above a short window is not yet a departure; past spike_min_history losses any rise is.
  SeriesTracker c;
  for (int64_t i = 0; i < 40; ++i) c.add({i, kLossSeries, i < 2 ? 2.30 : 2.30 * 1.09});
  EXPECT_FALSE(c.finish().diverged());
  SeriesTracker d;
  for (int64_t i = 0; i < 60; ++i) d.add({i, kLossSeries, i < 20 ? 2.30 : 2.30 * 1.09});
  EXPECT_EQ(d.finish().divergence_step, 20);
}

TEST(SeriesRules, ABriefExcursionThatComesBackIsNoDivergence) {
  std::vector<double> loss = healthy_loss(300, 1);
  for (int i = 200; i < 205; ++i) loss[static_cast<std::size_t>(i)] = 5.0;  // 5 < divergence_steps
  const SeriesReport r = judge_losses(loss);
  EXPECT_FALSE(r.diverged());
  EXPECT_GE(r.spike_count, 1);
  EXPECT_EQ(r.spikes[0].step, 200);
}

TEST(SeriesRules, ANonFiniteLossIsADivergenceAtItsStep) {
  std::vector<double> loss = healthy_loss(50, 2);
  loss.push_back(std::nan(""));
  loss.push_back(std::nan(""));
  const SeriesReport r = judge_losses(loss);
  ASSERT_TRUE(r.diverged());
  EXPECT_EQ(r.divergence_step, 50);
  EXPECT_TRUE(r.divergence_nonfinite);
  EXPECT_EQ(r.first_nonfinite_loss, 50);
  // A departure that ends in NaN began where it left the window.
  std::vector<double> rising = healthy_loss(50, 2);
  rising.push_back(30);
  rising.push_back(INFINITY);
  const SeriesReport q = judge_losses(rising);
  EXPECT_EQ(q.divergence_step, 50);
  EXPECT_TRUE(q.divergence_nonfinite);
}

// A finite loss past float32's range is no training loss (float32 would overflow to Inf): it is
// LOSS_OUT_OF_RANGE, kept out of the band, so the ordinary losses after it are no spikes.
TEST(SeriesRules, ALossBeyondFloat32IsItsOwnFindingAndLeavesTheBandAlone) {
  std::vector<double> loss = healthy_loss(200, 4);
  loss[60] = -1e200;
  loss[90] = 5e38;
  const SeriesReport r = judge_losses(loss);
  EXPECT_EQ(r.spike_count, 0);
  EXPECT_FALSE(r.diverged());
  EXPECT_EQ(r.out_of_range_losses, 2);
  EXPECT_EQ(r.first_out_of_range_step, 60);
  EXPECT_DOUBLE_EQ(r.first_out_of_range_loss, -1e200);
  EXPECT_EQ(r.loss_steps, 200);
  EXPECT_GT(r.min_loss, 0);  // the lowest loss is a loss, not the value out of range
  const std::vector<Finding> f = series_findings(r, Thresholds{});
  ASSERT_EQ(f.size(), 1u);
  EXPECT_EQ(f[0].type, "LOSS_OUT_OF_RANGE");
  EXPECT_EQ(f[0].since_step, 60);
  EXPECT_THAT(f[0].premise, HasSubstr("beyond float32's range"));
  EXPECT_THAT(series_headline(r), HasSubstr("LOSS_OUT_OF_RANGE at step 60"));
  // Within float32's range a large loss is judged as any other: -1e30 is no spike either, and
  // the band it leaves behind is exact (a planted spike after it is found).
  std::vector<double> large = healthy_loss(600, 4);
  large[60] = -1e30;
  large[400] += 1.5;
  const SeriesReport q = judge_losses(large);
  EXPECT_EQ(q.out_of_range_losses, 0);
  ASSERT_EQ(q.spike_count, 1);
  EXPECT_EQ(q.spikes[0].step, 400);
  // The count is exact; FLT_MAX itself is in range.
  std::vector<double> edge = healthy_loss(50, 4);
  edge[20] = std::numeric_limits<float>::max();
  EXPECT_EQ(judge_losses(edge).out_of_range_losses, 0);
}

TEST(SeriesRules, ASpikeThatEndsInNaNIsTheDivergenceNotASpikeApart) {
  std::vector<double> loss = healthy_loss(50, 2);
  loss.push_back(30);        // a spike, and the loss leaves
  loss.push_back(INFINITY);  // and turns infinite before divergence_steps pass
  const SeriesReport r = judge_losses(loss);
  ASSERT_TRUE(r.diverged());
  EXPECT_EQ(r.divergence_step, 50);
  EXPECT_EQ(r.spike_count, 0);
  EXPECT_TRUE(r.spikes.empty());
}

TEST(SeriesRules, TheCountAndTheListOfSpikesAgreeWhenManyBecomeTheDivergence) {
  // A long confirmation (divergence_steps 150) during which every loss is a spike (10x the
  // early maximum): more spikes than are listed, all of them the divergence's.
  Thresholds t;
  t.divergence_steps = 150;
  std::vector<double> loss = healthy_loss(40, 3);
  for (int i = 0; i < 200; ++i) loss.push_back(100.0 + i);
  const SeriesReport r = judge_losses(loss, t);
  ASSERT_TRUE(r.diverged());
  EXPECT_EQ(r.divergence_step, 40);
  EXPECT_EQ(r.spike_count, 0);
  EXPECT_TRUE(r.spikes.empty());
  EXPECT_EQ(series_findings(r, t).size(), 1u);  // the divergence alone
}

TEST(SeriesRules, GradientNormsGiveTheirQuantilesAndTheClippingRate) {
  SeriesTracker s;
  for (int i = 1; i <= 100; ++i) {
    s.add({i, kGradNormSeries, static_cast<double>(i)});
    s.add({i, kClippedGradNormSeries, std::min(50.0, static_cast<double>(i))});
  }
  const SeriesReport r = s.finish();
  EXPECT_EQ(r.grad_norm_steps, 100);
  EXPECT_DOUBLE_EQ(r.grad_norm_median, 50);
  EXPECT_DOUBLE_EQ(r.grad_norm_p99, 99);
  EXPECT_DOUBLE_EQ(r.grad_norm_max, 100);
  EXPECT_EQ(r.grad_norm_max_step, 100);
  EXPECT_EQ(r.clip_known_steps, 100);
  EXPECT_EQ(r.clipped_steps, 50);
  EXPECT_FALSE(r.has_loss());
}

TEST(SeriesRules, TheNormsBeforeTheOnsetAreKeptApartForTheClippingAdvice) {
  SeriesTracker s;
  std::vector<double> before;
  for (int64_t i = 0; i < 80; ++i) {
    const double norm = i < 50 ? 0.2 + 0.001 * static_cast<double>(i % 7) : 300.0;
    if (i < 50) before.push_back(norm);
    s.add({i, kLossSeries, i < 50 ? 4.0 - 0.01 * static_cast<double>(i) : 60.0});
    s.add({i, kGradNormSeries, norm});
  }
  const SeriesReport r = s.finish();
  ASSERT_EQ(r.divergence_step, 50);
  EXPECT_EQ(r.grad_norm_steps_before, 50);
  std::sort(before.begin(), before.end());
  EXPECT_DOUBLE_EQ(r.grad_norm_median_before, before[24]);  // nearest rank: the 25th of 50
  EXPECT_DOUBLE_EQ(r.grad_norm_max_before, before.back());
  std::vector<double> all = before;
  all.insert(all.end(), 30, 300.0);
  std::sort(all.begin(), all.end());
  EXPECT_DOUBLE_EQ(r.grad_norm_median, all[39]);  // 40th of 80: still a healthy step's
  EXPECT_DOUBLE_EQ(r.grad_norm_max, 300);
}

TEST(SeriesRules, StepsOfASeriesMustNotGoBack) {
  SeriesTracker s;
  s.add({5, kLossSeries, 1});
  s.add({5, kLossSeries, 9});  // a repeat keeps the first
  EXPECT_THROW(s.add({4, kLossSeries, 1}), Error);
  s.add({3, "aux_loss", 1});  // another series has its own steps, and is not judged
  EXPECT_EQ(s.finish().loss_steps, 1);
  EXPECT_DOUBLE_EQ(s.finish().last_loss, 1);
}

using test::grad_record;

TEST(GradientSpike, ABurstIsFlaggedOnTheNodeAndLeadsTheDivergence) {
  std::mt19937 rng(11);
  std::normal_distribution<double> noise(0, 1);
  ReportBuilder b;
  std::vector<double> rnn_l2;
  for (int64_t step = 0; step < 200; ++step) {
    const bool burst = step == 150;
    rnn_l2.push_back((burst ? 500.0 : 2.0) + 0.1 * noise(rng));
    b.add(grad_record(step, "rnn", rnn_l2.back()));
    b.add(grad_record(step, "decoder", 1.0 + 0.05 * noise(rng)));
    const double loss = step <= 150 ? 3.0 + 0.05 * noise(rng) : 50.0;
    b.add(StepScalar{step, kLossSeries, loss});
  }
  const Report r = b.build();
  const NodeReport* rnn = nullptr;
  const NodeReport* decoder = nullptr;
  for (const NodeReport& n : r.nodes) (n.node == "rnn" ? rnn : decoder) = &n;
  ASSERT_TRUE(rnn && decoder);
  ASSERT_TRUE(rnn->flags.contains(Flag::kGradientSpike));
  EXPECT_FALSE(decoder->flags.contains(Flag::kGradientSpike)) << decoder->flags.join();
  EXPECT_EQ(rnn->evidence.front().first_step, 150);
  EXPECT_GT(rnn->evidence.front().value, 200);  // ~250x the largest of its window
  EXPECT_DOUBLE_EQ(rnn->evidence.front().threshold, 10);
  ASSERT_TRUE(r.series.diverged());
  EXPECT_EQ(r.series.divergence_step, 151);
  ASSERT_EQ(r.series.leads.size(), 1u);
  EXPECT_EQ(r.series.leads[0].node, "rnn");
  EXPECT_EQ(r.series.leads[0].step, 150);
  EXPECT_EQ(r.series.leads[0].lead, 1);
  // Against the largest of the 128 steps before it, found here.
  const double highest = *std::max_element(rnn_l2.begin() + 22, rnn_l2.begin() + 150);
  EXPECT_NEAR(r.series.leads[0].ratio, rnn_l2[150] / highest, 1e-9);
  EXPECT_FALSE(r.healthy());
}

// One corrupted batch at step 150: the loss and both nodes' gradients jump at that step, and
// the fc2 burst is the larger. With the bursts one step earlier, the gradients led.
Report corrupted_batch(int64_t burst_step) {
  ReportBuilder b;
  for (int64_t step = 0; step < 200; ++step) {
    const double wobble = 0.01 * static_cast<double>(step % 3);
    b.add(grad_record(step, "fc1", step == burst_step ? 40.0 : 1.0));
    b.add(grad_record(step, "fc2", step == burst_step ? 70.0 : 1.0));
    b.add(StepScalar{step, kLossSeries, step == 150 ? 9.0 : 0.5 + wobble});
    b.add(StepScalar{step, kBatchSeries, static_cast<double>(step % 28)});
  }
  return b.build();
}

TEST(GradientSpike, BurstsAtTheSpikesOwnStepAreNotSaidToComeFirst) {
  const Report same = corrupted_batch(150);
  ASSERT_EQ(same.series.spike_count, 1);
  ASSERT_EQ(same.series.leads.size(), 2u);
  EXPECT_EQ(same.series.leads[0].node, "fc2");  // at one step, the larger burst first
  EXPECT_EQ(same.series.leads[0].lead, 0);
  const std::string headline = series_headline(same.series);
  EXPECT_THAT(headline, HasSubstr("gradients burst at the same step in fc2 (70x its recent largest), then fc1 (40x"));
  EXPECT_THAT(headline, ::testing::Not(HasSubstr("first")));
  const std::vector<Finding> spike = series_findings(same.series, same.thresholds);
  ASSERT_EQ(spike.size(), 1u);
  EXPECT_THAT(spike[0].action, HasSubstr("Inspect the batch of step 150 (batch 10)"));
  EXPECT_THAT(spike[0].action, HasSubstr("The gradients burst at the same step: the batch moved both"));
  EXPECT_THAT(spike[0].action, ::testing::Not(HasSubstr("clip")));
  // A step earlier, the gradients led the loss: then clipping is the advice.
  const Report led = corrupted_batch(149);
  ASSERT_EQ(led.series.leads.size(), 2u);
  EXPECT_EQ(led.series.leads[0].lead, 1);
  EXPECT_THAT(series_headline(led.series), HasSubstr("gradients burst first in fc2 at step 149 (70x its recent largest, 1 step before)"));
  const std::vector<Finding> led_spike = series_findings(led.series, led.thresholds);
  ASSERT_EQ(led_spike.size(), 1u);
  EXPECT_THAT(led_spike[0].action, HasSubstr("The gradients burst before the loss did: clip the global gradient norm"));
}

TEST(SeriesRules, ARunThatClipsAlreadyIsToldToLowerTheLearningRateNotToClip) {
  // A loss that leaves its band for good at step 150 while clipping acts at every other step.
  ReportBuilder b;
  for (int64_t step = 0; step < 200; ++step) {
    b.add(StepScalar{step, kLossSeries, step < 150 ? 2.5 + 0.01 * static_cast<double>(step % 3) : 3.6});
    b.add(StepScalar{step, kGradNormSeries, step % 2 ? 1.5 : 0.8});
    b.add(StepScalar{step, kClippedGradNormSeries, step % 2 ? 1.0 : 0.8});
  }
  const Report clipping = b.build();
  ASSERT_TRUE(clipping.series.diverged());
  ASSERT_EQ(clipping.series.clipped_steps, 100);
  const std::vector<Finding> f = series_findings(clipping.series, clipping.thresholds);
  ASSERT_FALSE(f.empty());
  EXPECT_THAT(f[0].action, HasSubstr("lower the learning rate: clipping already acted at 100 of 200 steps"));
  EXPECT_THAT(f[0].action, ::testing::Not(HasSubstr("clip the global gradient norm")));
  // The same losses without clipping: a clipping value from the measured norms.
  ReportBuilder plain;
  for (int64_t step = 0; step < 200; ++step) {
    plain.add(StepScalar{step, kLossSeries, step < 150 ? 2.5 + 0.01 * static_cast<double>(step % 3) : 3.6});
    plain.add(StepScalar{step, kGradNormSeries, step % 2 ? 1.5 : 0.8});
  }
  const Report unclipped = plain.build();
  const std::vector<Finding> g = series_findings(unclipped.series, unclipped.thresholds);
  ASSERT_FALSE(g.empty());
  EXPECT_THAT(g[0].action, HasSubstr("clip the global gradient norm near the typical norm"));
}

TEST(GradientSpike, NoisyHealthyGradientsAreQuiet) {
  for (unsigned seed = 0; seed < 5; ++seed) {
    std::mt19937 rng(seed);
    std::lognormal_distribution<double> noise(0, 0.2);
    ReportBuilder b;
    for (int64_t step = 0; step < 1000; ++step)
      for (const char* node : {"a", "b", "c"}) b.add(grad_record(step, node, 2.0 * std::exp(-step / 500.0) * noise(rng)));
    const Report r = b.build();
    EXPECT_TRUE(r.healthy()) << seed;
    EXPECT_TRUE(r.series.leads.empty());
  }
}

TEST(GradientSpike, DriftAndASmallLastBatchAreNoSpike) {
  // What a 6-sigma band flags and this rule must not: a gradient that grows 30% a step early in
  // training (a vanishing stack recovering), and every 50th step 2.5x larger (the last, small
  // batch of an epoch: its mean over fewer samples is noisier).
  ReportBuilder b;
  double g = 1e-6;
  for (int64_t step = 0; step < 300; ++step) {
    if (step < 40) g *= 1.3;
    b.add(grad_record(step, "trunk", step % 50 == 49 ? 2.5 * g : g));
  }
  const Report r = b.build();
  EXPECT_TRUE(r.healthy()) << r.nodes[0].flags.join();
  // The band itself would have called them spikes: the rule is what keeps them out.
  RecentBand band(128);
  int band_spikes = 0;
  g = 1e-6;
  for (int64_t step = 0; step < 300; ++step) {
    if (step < 40) g *= 1.3;
    const double x = step % 50 == 49 ? 2.5 * g : g;
    band_spikes += band.test(x, 6, 16).above;
    band.push(x);
  }
  EXPECT_GT(band_spikes, 0);
}

TEST(GradientSpike, NeedsTwoEarlierValuesAndAPositiveMaximum) {
  ReportBuilder b;
  // A zero-initialised layer after it: zero gradients first, then the first real ones.
  for (int64_t step = 0; step < 2; ++step) b.add(grad_record(step, "enc", 0.0));
  b.add(grad_record(2, "enc", 1.0));
  b.add(grad_record(3, "enc", 1.1));
  b.add(grad_record(4, "enc", 1.0));
  b.add(grad_record(5, "enc", 50.0));  // 45x the largest of 5 values, 3 of them positive
  // (step 2's 1.0 against a window of zeros is no spike: its largest is not positive)
  const Report r = b.build();
  ASSERT_TRUE(r.nodes[0].flags.contains(Flag::kGradientSpike));
  EXPECT_EQ(r.nodes[0].evidence.front().first_step, 5);
  EXPECT_NEAR(r.nodes[0].evidence.front().value, 50.0 / 1.1, 1e-9);
}

TEST(GradientSpike, ThresholdsOutOfRangeAreRefused) {
  Thresholds t;
  t.spike_window = 1;
  EXPECT_THROW(t.validate(), Error);
  t = {};
  t.spike_early_factor = 0.5;
  EXPECT_THROW(t.validate(), Error);
  t = {};
  t.grad_spike_ratio = 0.5;
  EXPECT_THROW(t.validate(), Error);
  t = {};
  t.spike_lookback = 0;
  EXPECT_NO_THROW(t.validate());
}

}  // namespace
}  // namespace gradscope
