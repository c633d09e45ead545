// StepScalars: what one step's records become in a TensorBoard event, the same whether the
// step comes live (TensorBoardSink) or from a saved run (`gradscope export --format
// tensorboard`). Tags are "<measure>/<node>", so TensorBoard draws one card per measure with
// every node in it (docs/tensorboard.md lists them):
//
//   grad_l2/<node>                    L2 of the node's gradient (the first of param_grad,
//                                     embedding_rows, output_grad recorded, as the rules pick);
//                                     NaN when it had a NaN element, +Inf for an Inf one
//   update_ratio/<node>               ||update|| / ||param|| (both recorded, param L2 > 0)
//   activation_zero_frac/<node>       share of activation elements with |x| <= dead_eps
//   activation_saturated_frac/<node>  share with finite |x| > saturation
//   activation_nonfinite_frac/<node>  share that is NaN or +-Inf
//   effective_rank/<node>             from a channel record, when the channel view measured it
//   flag/<FLAG>/<node>                1 when this step's own value crossed the rule's threshold
//                                     (the step Evidence::first_step names), else 0
//
//   gradscope::tensorboard::StepScalars scalars(thresholds);
//   gradscope::tensorboard::StepSummary event;
//   scalars.add(step.records, event);            // then writer.write(step.step, t, event)
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "gradscope/core/attention/rules.h"
#include "gradscope/core/series/rules.h"
#include "gradscope/core/audit/channels.h"
#include "gradscope/core/audit/element_histogram.h"
#include "gradscope/core/embedding/profile.h"
#include "gradscope/core/embedding/report.h"
#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/audit/step_judgement.h"
#include "gradscope/core/vocabulary/thresholds.h"
#include "gradscope/core/compress/recipe.h"
#include "gradscope/core/trees/dynamics.h"
#include "gradscope/tensorboard/event_writer.h"

namespace gradscope::tensorboard {

/// Per-step scalars and flags. Keeps per node only the run of low-update steps STAGNANT needs.
class StepScalars {
 public:
  /// Throws Error for invalid thresholds.
  explicit StepScalars(Thresholds thresholds);
  /// Adds to `out` the scalars of one step's `records` (records of one node and site merge).
  void add(const std::vector<Record>& records, StepSummary& out);
  const Thresholds& thresholds() const { return thresholds_; }

 private:
  Thresholds thresholds_;
  std::unordered_map<std::string, StagnantRun> stagnant_runs_;  // by node: consecutive low-update steps
};

/// Adds the histograms of one channel record: channel_activation_mean/<node> (each channel's
/// mean activation) and channel_grad_l2/<node> (each channel's output-gradient L2), and
/// effective_rank/<node> when measured. Channels whose statistic is not finite are left out of
/// the histogram (it has no bucket for them) and counted in channel_activation_mean_nonfinite/
/// <node> and channel_grad_l2_nonfinite/<node>.
void add_channel_histograms(const ChannelRecord& record, StepSummary& out);

/// Adds the element histograms of one step (AuditOptions::histogram_every):
/// activation_elements/<node>, output_grad_elements/<node>, param_grad_elements/<node> (all of
/// a node's parameter gradients together), each over the tensor's finite elements; the NaN and
/// +-Inf elements are counted in <site>_elements_nonfinite/<node> when there are any.
void add_element_histograms(const std::vector<ElementHistogram>& histograms, StepSummary& out);

/// Adds the attention statistics of one step (AuditOptions::attention_every), per node and head
/// h: attention_max_logit/<node>/head<h> (largest pre-softmax logit),
/// attention_entropy_fraction/<node>/head<h> (mean entropy / log(keys seen)) and
/// attention_top_key_frac/<node>/head<h> (share of queries whose top key takes > 0.99 of the
/// weight); a head with no counted query adds none.
void add_attention_scalars(const std::vector<AttentionRecord>& records, StepSummary& out);

/// Adds the per-step scalars (core/series) of step `step` under their series' names: loss,
/// grad_norm (before clipping), grad_norm_clipped, batch and the user's own; NaN and Inf kept.
/// Scalars of other steps are left for their own events.
void add_series_scalars(const std::vector<StepScalar>& scalars, int64_t step, StepSummary& out);

/// Adds each table's embedding metrics, judged over the whole run (embedding.json):
/// embedding/coverage/<table> (exposed rows / rows), embedding/dead_fraction/<table> (never
/// exposed or never updated, over rows), embedding/zombie_fraction/<table> (zombie rows over
/// rows), embedding/lookup_gini/<table>, embedding/popularity_gini/<table>.
void add_embedding_metrics(const std::vector<EmbeddingReport>& tables, StepSummary& out);

/// Adds each table's profile histograms: embedding/exposure/<table> (steps each exposed row was
/// in a batch) and embedding/velocity/<table> (each row's mean update norm), the profile's own
/// bins as TensorBoard buckets (bucket 0 holds the values below the first edge). The profile
/// keeps counts per bin, not the values, so min and max are the outer edges and sum and
/// sum_squares are 0 (TensorBoard draws the buckets).
void add_embedding_profiles(const std::vector<EmbeddingProfile>& tables, StepSummary& out);

/// Adds a boosted model's measures of round `round` (docs/trees.md), each only when the run
/// measured it: trees/train_loss, trees/valid_loss, trees/contribution (mean |round output|),
/// trees/velocity, trees/leaf_mean_abs, trees/gain, trees/leaves and trees/split_concentration
/// (the sum of squared feature shares of the round's splits, by gain when the model has gains,
/// else by count: 1 when every split is on one feature).
void add_tree_round_metrics(const TreeDynamicsReport& report, std::size_t round, StepSummary& out);

/// Adds the measured compression points at the run's last step (docs/compression.md):
/// compression/bytes/<method> and compression/accuracy/<method> per point ("<method> (<budget>)"
/// when two points share a method), and compression/bytes/fp32, compression/accuracy/fp32.
/// Accuracies not measured (NaN) are not written.
void add_compression_points(const compress::MeasuredComparison& comparison, StepSummary& out);

/// Tag of the report text (the text `gradscope report` prints).
inline constexpr const char* kReportTag = "gradscope/report";

/// `text` as TensorBoard's text dashboard should show it: it renders markdown, which would
/// fold the report's aligned columns, so every line is indented by four spaces (a markdown
/// code block; unlike a ``` fence, no node name can end it).
std::string report_markdown(const std::string& text);

}  // namespace gradscope::tensorboard
