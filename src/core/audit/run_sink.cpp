// node_values / apply_node_values: the report's values that no record holds, and back.
#include "gradscope/core/audit/run_sink.h"

#include <cmath>
#include <unordered_map>

namespace gradscope {

std::vector<NodeValue> node_values(const Report& report) {
  std::vector<NodeValue> values;
  for (const NodeReport& n : report.nodes)
    if (!std::isnan(n.grad_snr)) values.push_back({n.node, kGradSnr, n.grad_snr});  // +inf: no noise
  // A value row rather than a new column, so runs of older builds and older readers still work.
  const NonFiniteOrigin& o = report.nonfinite_origin;
  if (o.found() && o.rank >= 0) values.push_back({o.node, kNonFiniteRank, static_cast<double>(o.rank)});
  return values;
}

void apply_node_values(Report& report, const std::vector<NodeValue>& values) {
  std::unordered_map<std::string, NodeReport*> by_id;
  for (NodeReport& n : report.nodes) by_id.emplace(n.node, &n);
  for (const NodeValue& v : values) {
    const auto it = by_id.find(v.node);
    if (it == by_id.end()) continue;
    if (v.name == kGradSnr) it->second->grad_snr = v.value;
    if (v.name == kNonFiniteRank && report.nonfinite_origin.node == v.node && v.value >= 0)
      report.nonfinite_origin.rank = static_cast<int64_t>(v.value);
  }
}

}  // namespace gradscope
