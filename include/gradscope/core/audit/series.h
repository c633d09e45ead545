// NodeSeries: per-node measures over steps (gradient norm, activation statistics, update
// ratio), for time-series charts. The report aggregates over steps; this keeps the steps.
//
//   gradscope::SeriesBuilder series(/*max_steps=*/400);
//   for (const gradscope::Record& r : records) series.add(r);   // steps non-decreasing
//   for (const gradscope::NodeSeries& n : series.finish())
//     for (const gradscope::SeriesPoint& p : n.points) plot(n.node, p.step, p.grad_norm);
//
// Records of one (step, node, site) merge, as in the report. Memory stays bounded on long
// runs: once more than `max_steps` steps are kept, every other kept step is dropped and only
// every 2nd (4th, ...) later step is kept, so the kept steps stay evenly spread.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "gradscope/core/vocabulary/record.h"

namespace gradscope {

/// One node at one step. Measures the step did not record are NaN.
struct SeriesPoint {
  int64_t step = 0;
  /// L2 of the parameter gradient, else of an embedding table's touched rows, else of the
  /// output gradient (the rules' choice); NaN when an element was NaN, +Inf when one was Inf.
  double grad_norm;
  double act_mean_abs;        ///< mean |x| of the activation (finite values)
  double act_std;             ///< std of the activation
  double act_zero_frac;       ///< fraction of activation elements with |x| <= dead_eps
  double act_saturated_frac;  ///< fraction with finite |x| > activation_saturation
  double update_ratio;        ///< ||delta theta|| / ||theta|| of the step
};

struct NodeSeries {
  std::string node;
  std::vector<SeriesPoint> points;  ///< ascending steps
};

class SeriesBuilder {
 public:
  /// `max_steps` = 0 keeps every step; otherwise at least 2.
  explicit SeriesBuilder(int64_t max_steps = 0);

  /// Adds a record. Throws Error when a step arrives after a later one.
  void add(const Record& record);
  /// Closes the last step and returns every node's series, in first-seen node order.
  std::vector<NodeSeries> finish();

  /// Every `stride()`-th step is kept now (1 until the first thinning).
  int64_t stride() const { return stride_; }

 private:
  struct Pending {
    Stats sites[kSiteCount];
    bool has[kSiteCount] = {};
    bool any = false;
  };
  void close_step();
  void thin();

  int64_t max_steps_;
  int64_t stride_ = 1;
  int64_t step_ordinal_ = -1;  // distinct steps seen, minus one
  int64_t pending_step_ = -1;
  bool started_ = false;
  std::vector<int64_t> kept_steps_;
  std::vector<NodeSeries> series_;
  std::vector<Pending> pending_;
  std::unordered_map<std::string, std::size_t> index_;
};

}  // namespace gradscope
