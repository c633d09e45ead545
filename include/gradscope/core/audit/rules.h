// Rules: thresholds turn records into flags with evidence. Pure functions of the records.
//
//   gradscope::ReportBuilder b(thresholds);
//   b.declare("fc1");                                   // listed even if never recorded
//   for (const auto& r : records) b.add(r);             // per node, steps non-decreasing
//   gradscope::Report report = b.build();
//
// The rules, over all steps of a node (comparisons strict):
//   NAN / INF   any NaN / Inf element at any site, any step.
//   VANISHING   mean over steps of the gradient L2 < grad_lo (parameter gradients; output
//               gradients when the node has no parameters); else EXPLODING when > grad_hi.
//   DEAD        activation zero fraction of some step > dead_frac.
//   SATURATED   saturated fraction of the pre-activation (a node's own output before a tanh,
//               sigmoid, hardtanh or softsign; recorded only where one follows) at some step >
//               saturation_frac. A large output elsewhere is not saturation.
//   ATTENTION_LOGIT_GROWTH, ATTENTION_ENTROPY_COLLAPSE   per head, from AttentionRecords
//               (core/attention/rules.h).
//   GRADIENT_SPIKE  the node's gradient L2 at a step > grad_spike_ratio x the largest of its
//               last spike_window steps (core/series/rules.h).
//   FROZEN      parameters recorded but never a parameter gradient (frozen parameters, or
//               trainable ones no gradient reached although the node ran forward).
//   STAGNANT    update L2 / parameter L2 < update_ratio_lo at stagnant_steps consecutive
//               steps with both recorded.
//   DEAD_CHANNELS(n)     n > channel_frac x channels with zero fraction > dead_frac, the
//                        node not DEAD.
//   IGNORED_CHANNELS(n)  n > channel_frac x channels, live, whose output-gradient L2 <
//                        ignored_channel_ratio x the median over live channels.
//   LEAKAGE     mean linear CKA with another branch or channel group > leakage_cka.
//   NO_DATA     no activation and no gradient recorded, and not FROZEN.
//   HEALTHY     none of the above.
// Flags of a node "a/b" also roll up to its parent "a" once per flag, with "in: b, ...".
// The report also names where NaN/Inf first appeared (NonFiniteOrigin).
//
// Memory is O(nodes) (plus channels and branch pairs), whatever the number of records: a run
// of a million steps is judged from these aggregates, fed step by step (the Audit does so).
#pragma once

#include <array>
#include <limits>
#include <utility>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "gradscope/core/attention/rules.h"
#include "gradscope/core/audit/channels.h"
#include "gradscope/core/audit/report.h"
#include "gradscope/core/audit/step_judgement.h"
#include "gradscope/core/series/rules.h"

namespace gradscope {

/// Accumulates records incrementally (memory per node, not per record) and builds a Report.
/// Report::steps counts a step when a record arrives with a step above every step seen so far
/// (O(1) memory): exact for records in step order across nodes (the Audit's and the run
/// reader's order) and for a feed node by node whose first node has every step; a step that
/// only a later node of such a feed has, below steps already seen, is not counted.
class ReportBuilder {
 public:
  explicit ReportBuilder(Thresholds thresholds = {});

  /// Makes `node` appear in the report even without records, at this position in the order.
  void declare(const std::string& node);
  /// Records of one node must arrive in non-decreasing step order; records with the same
  /// (step, node, site) merge, so a module called twice in one step counts both calls.
  void add(const Record& record);
  /// Per-channel summaries; every record of a node must have the same channel count.
  void add(const ChannelRecord& record);
  void add(const SimilarityRecord& record);
  /// A node's attention at a sampled step; records of a node arrive in increasing steps, with
  /// the same number of heads.
  void add(const AttentionRecord& record);
  /// A per-step scalar (the loss, the global gradient norm): core/series/rules.h. Steps of one
  /// series must not decrease.
  void add(const StepScalar& scalar);
  Report build() const;
  /// Same, with the nodes named in `order` first, in that order (declared when not seen), then
  /// the rest in declaration order: the order that sets NonFiniteOrigin and the report's rows.
  Report build(const std::vector<std::string>& order) const;

 private:
  struct SiteAccum {
    bool seen = false;
    Stats current;      // merge of this step's records
    Stats total;        // merge of every record
    int64_t steps = 0;  // finished steps with data
    int64_t finite_steps = 0;  // of those, steps with a finite value: sum_l2 covers these
    double sum_l2 = 0;
    double max_frac_zero = 0, max_frac_saturated = 0;
    int64_t first_nan = -1, first_inf = -1, first_below_lo = -1, first_above_hi = -1;
    int64_t first_dead = -1, first_saturated = -1;
    void finish_step(int64_t step, const Thresholds& t);
  };
  struct NodeAccum {
    std::string node;
    int64_t steps = 0, first_step = -1, last_step = -1;
    std::array<SiteAccum, kSiteCount> sites;
    // Update ratio per step, and the current run of stagnant steps.
    double sum_update_ratio = 0;
    int64_t update_steps = 0, stagnant_run_start = -1, first_stagnant = -1;
    StagnantRun stagnant;  // consecutive steps below update_ratio_lo
    int64_t longest_stagnant = 0;
    double stagnant_max_ratio = 0;  // largest ratio inside the first qualifying run
    // Channel view.
    std::vector<Stats> channel_act, channel_grad;
    double sum_effective_rank = 0;
    int64_t effective_rank_samples = 0;
    // Similarity to other branches: sum and count per other, first step above threshold.
    std::map<std::string, std::array<double, 2>> cka;
    std::map<std::string, int64_t> first_leak;
    // Attention: one track per head.
    std::vector<HeadTrack> heads;
    // GRADIENT_SPIKE: the node's gradient L2 per step against its own recent band.
    static constexpr std::size_t kKeptSpikes = 1000;  // for the leads; the count is exact
    RecentBand grad_band{128};
    RecentMax grad_max{128};
    int64_t grad_spikes = 0;
    std::vector<SeriesSpike> grad_spike_list;  // the first kKeptSpikes
    // DEPTH_GRADIENT_IMBALANCE: the gradient L2 of the first kDepthSteps audited steps.
    std::vector<std::pair<int64_t, double>> early_grad;
    void finish_step(const Thresholds& t);
  };

  NodeAccum& node(const std::string& name);
  NodeReport judge(NodeAccum node) const;
  void judge_nonfinite(const NodeAccum& n, NodeReport& r) const;
  void judge_presence(const NodeAccum& n, Site param_grad_site, NodeReport& r) const;
  void judge_channels(const NodeAccum& n, NodeReport& r) const;
  void judge_leakage(const NodeAccum& n, NodeReport& r) const;
  static NonFiniteOrigin find_origin(const std::vector<NodeAccum>& nodes);
  static void roll_up(std::vector<NodeReport>& nodes);
  std::vector<SpikeLead> spike_leads(const std::vector<NodeAccum>& nodes, int64_t onset) const;
  void judge_depth(const std::vector<NodeAccum>& nodes, Report& report) const;

  Report build_nodes(std::vector<NodeAccum> nodes) const;

  Thresholds thresholds_;
  SeriesTracker series_;
  std::vector<NodeAccum> nodes_;
  std::unordered_map<std::string, std::size_t> index_;
  int64_t steps_ = 0;           // distinct steps, counted as the latest step rises
  int64_t latest_step_ = -1;
};

/// Convenience: builds a report from a list of records.
Report build_report(const std::vector<Record>& records, const Thresholds& thresholds = {});

}  // namespace gradscope
