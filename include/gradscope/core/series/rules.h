// The per-step scalar series of a run (the loss, the global gradient norm before and after
// clipping) and their rules, fed step by step in O(1) time per value:
//
//   gradscope::SeriesTracker series(thresholds);
//   series.add({step, gradscope::kLossSeries, loss});
//   series.add({step, gradscope::kGradNormSeries, total_norm_before_clipping});
//   gradscope::SeriesReport r = series.finish();   // spikes, divergence, norms
//
// LOSS_SPIKE   a loss above its own recent band: > mean + spike_sigma x sd of the last
//              spike_window losses (at least spike_min_history of them; OLMo-core's stability
//              monitor: 6 sigma over 128), or >= spike_early_factor x the largest of the run's
//              first spike_early_steps losses (Megatron-LM's spiky-loss check: 10x).
// DIVERGENCE   the loss became NaN or Inf, or it rose above the highest loss of its recent
//              window (the last spike_window losses; while fewer than spike_min_history are
//              seen, by kShortWindowRise of it) and stayed above that level for
//              divergence_steps losses in a row: it left and did not come back. Its onset is the
//              step it first rose above; a spike at the onset is the divergence, not apart.
// GRADIENT_SPIKE   a node's gradient L2 above grad_spike_ratio x the largest of its last
//              spike_window values (at least kGradSpikeHistory of them): a burst, not the
//              drift of a gradient that grows or shrinks over training, nor the noise of a
//              small last batch (a 6-sigma band fires on both: measured on the demo's runs).
// The nodes behind a divergence or a loss spike (attribution) are those with a GRADIENT_SPIKE
// within spike_lookback steps before its onset, earliest first (audit/rules.h fills
// SeriesReport::leads).
#pragma once

#include <cmath>
#include <cstdint>
#include <deque>
#include <utility>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "gradscope/core/vocabulary/thresholds.h"
#include "gradscope/core/series/band.h"

namespace gradscope {

/// The series names a StepScalar may have; others are kept and shown, never judged.
inline constexpr const char* kLossSeries = "loss";
/// The global L2 of every parameter gradient as backward produced it, before any clipping.
inline constexpr const char* kGradNormSeries = "grad_norm";
/// The same after clipping: the norm the optimizer applied (absent when nothing clipped).
inline constexpr const char* kClippedGradNormSeries = "grad_norm_clipped";
/// The index of the step's batch in the user's data, so that a spike names the batch to inspect.
inline constexpr const char* kBatchSeries = "batch";
/// The output layer's mean log-partition, mean over rows of log sum exp of its logits (the
/// quantity z-loss, 1e-4 x log^2 Z, pulls toward 0), and its mean logit: measured, not judged.
inline constexpr const char* kLogZSeries = "log_z";
inline constexpr const char* kLogitMeanSeries = "logit_mean";

/// One value of one series at one step.
struct StepScalar {
  int64_t step = 0;
  std::string name;
  double value = 0;
};

/// A loss above its band, or a node's gradient above its own (GRADIENT_SPIKE's evidence).
struct SeriesSpike {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  int64_t step = -1;
  double value = kNone;
  double band_mean = kNone;  ///< mean of the recent band (NaN: the early rule fired alone)
  double band_sd = kNone;
  double z = kNone;          ///< (value - band_mean) / band_sd as tested; NaN: early rule alone
  double early_max = kNone;  ///< largest of the first spike_early_steps values before it
  bool early_rule = false;   ///< >= spike_early_factor x early_max
  double window_max = kNone; ///< largest of the last spike_window values before it
  double batch = kNone;      ///< the step's batch index (kBatchSeries), when recorded
};

/// Earlier values a node's gradient needs before a GRADIENT_SPIKE can be judged: its first may
/// be zero (a zero-initialised layer after it). An LSTM at a learning rate too high for it
/// blows up from its third step (examples/lstm_lm.py): two is what catches that.
inline constexpr int64_t kGradSpikeHistory = 2;

/// A node whose gradient left its band before a loss spike or divergence.
struct SpikeLead {
  std::string node;
  int64_t step = -1;  ///< the step its gradient first left its band
  int64_t lead = 0;   ///< onset step - step: how many steps it moved before the loss
  double z = SeriesSpike::kNone;
  double ratio = SeriesSpike::kNone;  ///< its gradient L2 / the largest of its window before
};

/// Everything the series rules found, for the run as a whole.
struct SeriesReport {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  static constexpr std::size_t kListed = 100;  ///< spikes listed; the counts are exact

  // The loss.
  int64_t loss_steps = 0;
  int64_t first_loss_step = -1, last_loss_step = -1;
  double first_loss = kNone, last_loss = kNone, min_loss = kNone;
  int64_t min_loss_step = -1;
  int64_t spike_count = 0;
  std::vector<SeriesSpike> spikes;  ///< LOSS_SPIKE, the first kListed, divergence onset excluded
  // DIVERGENCE: -1 when none.
  int64_t divergence_step = -1;
  bool divergence_nonfinite = false;  ///< the loss became NaN or Inf (at divergence_step)
  double divergence_value = kNone;    ///< the loss at the onset
  double divergence_level = kNone;    ///< the highest loss of the window before it
  double divergence_last = kNone;     ///< the last loss of the run
  int64_t divergence_back = -1;       ///< first step the loss came back to the level; -1: never
  int64_t first_nonfinite_loss = -1;
  // LOSS_OUT_OF_RANGE: finite losses beyond float32's range (|loss| > FLT_MAX). No float32 or
  // bfloat16 network computes one (it would overflow to Inf): the value handed over is wrong.
  // Kept out of the band, the window and the levels, as non-finite losses are.
  int64_t out_of_range_losses = 0;
  int64_t first_out_of_range_step = -1;
  double first_out_of_range_loss = kNone;
  // Whether the loss fell at all (DEPTH_GRADIENT_IMBALANCE's stall): its early level, the lowest
  // mean of kLevelLosses consecutive finite losses among the first kEarlyLosses (past the first
  // drop a model makes to the labels' base rate), and the mean of its last kLateLosses finite
  // losses. NaN when fewer than kEarlyLosses + kLateLosses finite losses were seen.
  static constexpr int kEarlyLosses = 30, kLevelLosses = 10, kLateLosses = 20;
  /// DIVERGENCE's onset while fewer than spike_min_history losses are seen: above the highest by
  /// this share of its magnitude (SeriesTracker::departs).
  static constexpr double kShortWindowRise = 0.1;
  double early_loss_level = kNone, late_loss_mean = kNone;
  // The global gradient norm before clipping (kGradNormSeries), and how often clipping acted.
  int64_t grad_norm_steps = 0;
  double grad_norm_median = kNone, grad_norm_p99 = kNone, grad_norm_max = kNone;
  // The same before the loss diverged or first spiked (onset()), when it did: the norms of a
  // training that still worked, where a clipping value is read.
  int64_t grad_norm_steps_before = 0;
  double grad_norm_median_before = kNone, grad_norm_max_before = kNone;
  int64_t grad_norm_max_step = -1;
  int64_t clipped_steps = 0;  ///< steps whose applied norm was below the norm before clipping
  int64_t clip_known_steps = 0;  ///< steps with both norms
  // Nodes whose gradient left their band before the divergence, else before the first loss
  // spike (set by ReportBuilder from the nodes' GRADIENT_SPIKE), earliest first.
  std::vector<SpikeLead> leads;

  bool has_loss() const { return loss_steps > 0; }
  bool diverged() const { return divergence_step >= 0; }
  /// Whether something that began at `step` began after the loss diverged: an effect of the
  /// blow-up (stagnation, saturation, NaN once the weights exploded), not its cause.
  bool follows_divergence(int64_t step) const { return diverged() && step > divergence_step; }
  /// The loss fell less than `fall` (a fraction) of its early level over the run; false when
  /// not known (too few losses).
  bool loss_stalled(double fall) const {
    return late_loss_mean > early_loss_level - fall * std::abs(early_loss_level);
  }
  /// The step the leads are measured from: the divergence's onset, else the first spike.
  int64_t onset() const { return diverged() ? divergence_step : (spikes.empty() ? -1 : spikes.front().step); }
};

/// Feeds the series step by step; steps of one series must not decrease.
class SeriesTracker {
 public:
  explicit SeriesTracker(Thresholds thresholds = {});

  /// Adds a value. Throws Error when the series' step goes back; a second value of the same
  /// step replaces nothing (the first is kept).
  void add(const StepScalar& scalar);
  /// The report so far (the tracker can go on).
  SeriesReport finish() const;

 private:
  struct Pending {
    int64_t onset = -1;  // a loss above the window's highest, not yet confirmed
    double level = 0, value = 0;
    int64_t run = 0;
    int64_t spikes = 0;  // spikes counted from the onset on: the divergence's, once confirmed
  };
  void confirm_divergence(int64_t onset, double value, double level);
  void add_loss(int64_t step, double value);
  bool departs(double value, double highest, int64_t seen) const;
  void add_norm(int64_t step, double value);
  void add_clipped(int64_t step, double value);
  void add_batch(int64_t step, double value);

  Thresholds t_;
  SeriesReport r_;
  RecentBand band_;
  RecentMax window_max_;  // the highest of the last spike_window losses
  int64_t loss_index_ = 0;
  double early_max_ = -std::numeric_limits<double>::infinity();
  Pending pending_;
  int64_t last_loss_step_ = -1, last_norm_step_ = -1, last_clipped_step_ = -1, last_batch_step_ = -1;
  double last_batch_ = std::numeric_limits<double>::quiet_NaN();
  double last_norm_ = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> early_losses_;  // the first kEarlyLosses finite losses
  std::deque<double> late_losses_;    // the last kLateLosses finite losses
  int64_t finite_losses_ = 0;
  // Every finite global norm with its step, for the quantiles: 16 bytes a step.
  std::vector<std::pair<int64_t, double>> norms_;
};

/// Tests `value` (at `step`) against `band` and the early maximum (`early_max` of the first
/// spike_early_steps values; -inf before any): the LOSS_SPIKE rule above, for any series (the
/// loss here, a node's gradient L2 in the module rules). Returns nullopt when it is no spike.
std::optional<SeriesSpike> test_spike(const RecentBand& band, double early_max, int64_t step, double value,
                                      const Thresholds& t);

/// The GRADIENT_SPIKE rule above for a node's gradient L2 `value` at `step`; `band` gives the
/// z-score shown beside it. nullopt when it is no spike.
std::optional<SeriesSpike> test_gradient_spike(const RecentMax& window, const RecentBand& band, int64_t step,
                                               double value, const Thresholds& t);

}  // namespace gradscope
