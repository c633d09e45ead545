// Thresholds: every number a rule compares against, in one struct, with its predecessors' defaults.
//
//   gradscope::Thresholds t;          // grad_lo 1e-7, grad_hi 1e3, dead_frac 0.95, ...
//   t.grad_hi = 1e2;                  // stricter explosion check
//   t.validate();                     // throws gradscope::Error for nonsense values
//
// Defaults come from Soma's audit, GradTracer and trustformers: docs/architecture.md says which
// come from whom, docs/prior-art.md what those systems do.
#pragma once

#include <vector>

#include "gradscope/core/stats/stats.h"
#include "gradscope/core/threshold_field.h"

namespace gradscope {

/// All thresholds the rules use. Comparisons are strict: a value equal to a threshold passes.
struct Thresholds {
  // Gradients: VANISHING when the mean gradient L2 over steps < grad_lo, EXPLODING when > grad_hi.
  double grad_lo = 1e-7;
  double grad_hi = 1e3;
  // Activations: an element is saturated when finite |x| > activation_saturation; a node is
  // SATURATED when the saturated fraction of some step > saturation_frac.
  double activation_saturation = 50.0;
  double saturation_frac = 0.5;
  // An element is zero when |x| <= dead_eps; a node is DEAD when its zero fraction of some
  // step > dead_frac.
  double dead_eps = 1e-7;
  double dead_frac = 0.95;
  // Updates: STAGNANT when ||delta theta|| / ||theta|| < update_ratio_lo for stagnant_steps
  // consecutive audited steps. Healthy training moves weights by ~1e-3 of their norm per
  // step (Karpathy's rule of thumb); 1e-6 is three orders of magnitude below.
  double update_ratio_lo = 1e-6;
  int stagnant_steps = 10;
  // Channels: a channel is dead when its activation zero fraction > dead_frac, ignored when
  // it is live but its output gradient is ~0 (ignored_channel_ratio). DEAD_CHANNELS and
  // IGNORED_CHANNELS need more than channel_frac of a node's channels: healthy ReLU nets on
  // digits measured 0-9% dead channels (tests/scenarios, six seeds), so 0.2 is about twice
  // the worst seen. LEAKAGE when the linear CKA (Kornblith et al. 2019) of two branches'
  // activations > leakage_cka.
  double channel_frac = 0.2;
  // A live channel is ignored when its output-gradient L2 is below this fraction of the
  // median over the node's live channels.
  double ignored_channel_ratio = 1e-3;
  double leakage_cka = 0.95;
  // Embedding rows, the default (windowed) zombie rule: each row's real updates are taken in
  // windows of zombie_window; a row is a zombie when, in each of its last two windows, the
  // mean cosine between consecutive updates is below both zombie_oscillation (an effect: the
  // updates point back, not merely at random) and -zombie_z / sqrt(dim x zombie_window) (the
  // z-score that independent directions in dim dimensions, cosine mean 0 and sd 1/sqrt(dim),
  // would reach by chance with probability 1.3e-3 per window), and its mean update norm did
  // not shrink below zombie_damping x that of the window before (a damped oscillation
  // converges). docs/embedding.md has the measurements behind the defaults.
  int zombie_window = 16;
  double zombie_z = 3.0;
  double zombie_damping = 0.5;
  // GradTracer's zombie rule (ZombieRule::kGradTracer, kept for comparison) and the auto-fix:
  // exposure > zombie_min_exposure, oscillation EMA < zombie_oscillation and velocity >
  // zombie_velocity_ratio x median velocity.
  double zombie_min_exposure = 5;
  double zombie_oscillation = -0.3;
  double zombie_velocity_ratio = 0.5;
  double velocity_ema = 0.9;
  double oscillation_ema = 0.8;
  // Gradient-flow health (trustformers): Critical / ProblemsDetected / MinorIssues when the
  // fraction of frames with issues exceeds these.
  double flow_critical_ratio = 0.5;
  double flow_problems_ratio = 0.3;
  double flow_minor_ratio = 0.1;
  // Attention (core/attention/rules.h), judged per head on sampled steps:
  // ATTENTION_LOGIT_GROWTH when the head's largest pre-softmax logit > attention_logit_hi for
  // attention_persist_steps sampled steps in a row, having started below it (Megatron-LM's
  // QK-clip takes 100 as its reference maximum). ATTENTION_ENTROPY_COLLAPSE when the head's mean
  // entropy fraction (entropy / log(keys seen)) is below attention_entropy_floor and below
  // attention_entropy_drop x its highest level over its first three samples, for
  // attention_persist_steps sampled steps in a row.
  double attention_logit_hi = 100;
  double attention_entropy_floor = 0.1;
  double attention_entropy_drop = 0.25;
  int attention_persist_steps = 3;
  // Per-step series (core/series/rules.h): LOSS_SPIKE when a loss > mean + spike_sigma x sd of
  // the last spike_window losses (at least spike_min_history of them): OLMo-core's stability
  // monitor uses 6 sigma over 128; or >= spike_early_factor x the largest of the first
  // spike_early_steps losses (Megatron-LM's spiky-loss check: 10x). GRADIENT_SPIKE when a
  // node's gradient L2 > grad_spike_ratio x the largest of its last spike_window values (the
  // same 10x: a 6-sigma band fires on gradients that drift over training and on the noise of
  // a small last batch of an epoch, as measured on the demo's runs). DIVERGENCE when the loss turns non-finite, or rises above the
  // highest of its last spike_window values and stays above it for divergence_steps losses.
  // The nodes whose gradient spiked up to spike_lookback steps before a loss spike or a
  // divergence are named as its lead.
  double spike_sigma = 6;
  int spike_window = 128;
  int spike_min_history = 16;
  double spike_early_factor = 10;
  int spike_early_steps = 100;
  int divergence_steps = 10;
  int spike_lookback = 10;
  double grad_spike_ratio = 10;
  // DEPTH_GRADIENT_IMBALANCE (audit/depth.h): in a stack of at least three numbered blocks, the
  // last block's gradient L2 above depth_grad_ratio x the first block's at each of depth_window
  // consecutive audited steps (of the first kDepthSteps), while the loss fell less than
  // plateau_fall of its early level: a deep stack that does not train, as a post-LN transformer
  // without warm-up (Xiong et al. 2020). On examples/transformer_lm.py the failing runs reach
  // 229-1612 and the healthy ones at most 45 (docs/attention.md).
  double depth_grad_ratio = 100;
  int depth_window = 20;
  double plateau_fall = 0.05;

  /// Throws Error naming the first threshold that is NaN, negative or out of order.
  void validate() const;

  /// The kernel options these thresholds imply (what counts as zero and saturated).
  StatsOptions stats_options(int threads = 1) const;
};

/// Every field of Thresholds with its valid range, in declaration order: a new threshold is a
/// member above and a row in this table (src/core/vocabulary/thresholds.cpp); validation, the run's
/// metadata, report.json and the Python binding read the table.
const std::vector<ThresholdField<Thresholds>>& threshold_fields();

}  // namespace gradscope
