// Timeline: gradient flow over steps, one frame per audited step, and its health.
//
//   gradscope::Timeline tl(thresholds, /*max_frames=*/500);   // 0 keeps every frame
//   for (const gradscope::Record& r : records) tl.add(r);     // steps non-decreasing
//   tl.finish();                                              // closes the last step
//   gradscope::FlowSummary s = gradscope::summarize_flow(tl);
//   std::cout << gradscope::flow_health_name(s.health) << "\n";   // "problems detected"
//
// A frame holds, per node, the gradient of that step from the first of kGradientSites it
// recorded (record.h): parameter gradients, else an embedding table's touched rows, else
// output gradients for a node without parameters (the rules' choice). Per-frame flags
// use the rules' measure, the step's gradient L2 against grad_lo / grad_hi, so the timeline
// and the report agree; trustformers compared mean|g| and max|g| instead, which disagree with
// the report on large layers. A NaN or Inf element makes the entry exploding.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/vocabulary/thresholds.h"

namespace gradscope {

/// One node in one frame. Values are NaN when the step's gradient had a NaN, +Inf for Inf.
struct FlowEntry {
  uint32_t node = 0;           ///< index into Timeline::nodes()
  double mean_abs_grad = 0;    ///< mean |g| over finite elements
  double max_abs_grad = 0;     ///< max |g| over finite elements (+Inf if any element is Inf)
  double grad_norm = 0;        ///< L2 (NaN if any element is NaN, +Inf if any is Inf)
  bool is_vanishing = false;   ///< grad_norm < grad_lo
  bool is_exploding = false;   ///< grad_norm > grad_hi, or any NaN/Inf element
  double flow_intensity = 0;   ///< grad_norm / largest finite norm of the step, in [0, 1];
                               ///< 1 for a non-finite norm, 0 when every norm is 0
};

/// Every node measured in one step, in first-seen node order.
struct Frame {
  int64_t step = 0;
  std::vector<FlowEntry> layers;
  /// True when some entry is vanishing or exploding.
  bool has_issue() const;
};

/// Rolling window of frames. Dropping the oldest frame is O(1) (a deque).
class Timeline {
 public:
  /// `max_frames` = 0 keeps every frame. Throws Error for invalid thresholds.
  explicit Timeline(Thresholds thresholds = {}, std::size_t max_frames = 0);

  /// Adds a record; only gradient sites (param_grad, embedding_rows, output_grad) are used. Records of one
  /// step merge; a record of a later step closes the current frame. Throws Error when a step
  /// arrives after a later one.
  void add(const Record& record);
  /// Closes the frame being accumulated, if any (call after the last record of a step).
  void finish();

  const std::deque<Frame>& frames() const { return frames_; }
  /// Node names in first-seen order; FlowEntry::node indexes this.
  const std::vector<std::string>& nodes() const { return nodes_; }
  const Thresholds& thresholds() const { return thresholds_; }
  std::size_t max_frames() const { return max_frames_; }
  /// Frames dropped by the window so far.
  int64_t dropped() const { return dropped_; }

 private:
  struct Pending {
    Stats grad[kGradientSiteCount];  // by gradient_site_rank
    bool has[kGradientSiteCount] = {};
  };
  uint32_t node_index(const std::string& name);

  Thresholds thresholds_;
  std::size_t max_frames_;
  int64_t dropped_ = 0;
  std::deque<Frame> frames_;
  std::vector<std::string> nodes_;
  std::unordered_map<std::string, uint32_t> index_;
  int64_t pending_step_ = -1;
  std::vector<Pending> pending_;        // by node index
  std::vector<uint32_t> pending_order_;  // nodes seen in the pending step
};

/// Overall gradient health, worst last.
enum class FlowHealth : uint8_t { kHealthy, kMinorIssues, kProblemsDetected, kCritical };

/// Lowercase name: "healthy", "minor issues", "problems detected", "critical".
const char* flow_health_name(FlowHealth health);

/// One node over the frames of a timeline.
struct NodeFlow {
  std::string node;
  int64_t frames = 0;            ///< frames the node appears in
  int64_t vanishing_frames = 0;
  int64_t exploding_frames = 0;
  int64_t first_vanishing = -1;  ///< step (-1: never)
  int64_t first_exploding = -1;
  double median_norm = 0;        ///< over the node's frames with a finite norm (NaN: none)
  double min_norm = 0;           ///< smallest finite norm (NaN: none)
  double max_norm = 0;           ///< largest norm, +Inf if any was Inf (NaN: none finite)
};

/// What the frames say, with recommendations that name nodes and measured values.
struct FlowSummary {
  int64_t frames = 0;
  int64_t issue_frames = 0;       ///< frames with a vanishing or exploding entry
  double issue_ratio = 0;         ///< issue_frames / frames (0 without frames)
  int64_t first_step = -1, last_step = -1;
  FlowHealth health = FlowHealth::kHealthy;
  std::vector<NodeFlow> nodes;    ///< Timeline::nodes() order
  std::vector<std::string> recommendations;
};

/// Classifies as trustformers does, with the ratios from Thresholds (comparisons strict):
/// Critical when some entry exploded and issue_ratio > flow_critical_ratio; ProblemsDetected
/// when some entry exploded or issue_ratio > flow_problems_ratio; MinorIssues when some entry
/// vanished or issue_ratio > flow_minor_ratio; else Healthy.
FlowHealth classify_flow(int64_t frames, int64_t issue_frames, bool any_vanishing,
                         bool any_exploding, const Thresholds& thresholds);

/// Summarises the frames currently in the window.
FlowSummary summarize_flow(const Timeline& timeline);

/// summarize_flow one frame at a time, so a caller that needs only the summary need not keep
/// every frame: over 1M node-steps the frames are 56 MB, and touching that memory first was
/// a third of `gradscope report`'s time. Add each frame as the timeline closes it.
class FlowSummaryBuilder {
 public:
  /// Throws Error for invalid thresholds.
  explicit FlowSummaryBuilder(Thresholds thresholds = {});
  void add(const Frame& frame);
  /// `nodes`: the timeline's node names (Timeline::nodes()), which FlowEntry::node indexes.
  FlowSummary finish(const std::vector<std::string>& nodes);

 private:
  Thresholds thresholds_;
  FlowSummary summary_;                     // counts so far; nodes_ indexed as FlowEntry::node
  std::vector<std::vector<double>> norms_;  // per node, the non-NaN norms
  bool any_vanishing_ = false, any_exploding_ = false;
};

}  // namespace gradscope
