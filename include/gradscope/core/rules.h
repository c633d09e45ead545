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
//   SATURATED   activation saturated fraction of some step > saturation_frac.
//   NO_DATA     no element recorded at all.   HEALTHY   none of the above.
#pragma once

#include <array>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "gradscope/core/report.h"

namespace gradscope {

/// Accumulates records incrementally (memory per node, not per record) and builds a Report.
class ReportBuilder {
 public:
  explicit ReportBuilder(Thresholds thresholds = {});

  /// Makes `node` appear in the report even without records (it is then NO_DATA).
  void declare(const std::string& node);
  /// Records of one node must arrive in non-decreasing step order; records with the same
  /// (step, node, site) merge, so a module called twice in one step counts both calls.
  void add(const Record& record);
  Report build() const;

 private:
  struct SiteAccum {
    bool seen = false;
    int64_t step = -1;  // step being accumulated
    Stats current;      // merge of this step's records
    Stats total;        // merge of every record
    int64_t steps = 0;  // finished steps with data
    double sum_l2 = 0;
    double max_frac_zero = 0, max_frac_saturated = 0;
    int64_t first_nan = -1, first_inf = -1, first_below_lo = -1, first_above_hi = -1;
    int64_t first_dead = -1, first_saturated = -1;
    void finish_step(const Thresholds& t);
  };
  struct NodeAccum {
    std::string node;
    int64_t steps = 0, first_step = -1, last_step = -1;
    std::array<SiteAccum, kSiteCount> sites;
  };

  NodeReport judge(NodeAccum node) const;

  Thresholds thresholds_;
  std::vector<NodeAccum> nodes_;
  std::unordered_map<std::string, std::size_t> index_;
  std::unordered_set<int64_t> all_steps_;
};

/// Convenience: builds a report from a list of records.
Report build_report(const std::vector<Record>& records, const Thresholds& thresholds = {});

}  // namespace gradscope
