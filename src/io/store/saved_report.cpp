#include "gradscope/io/store/saved_report.h"

namespace gradscope {

SavedReportBuilder::SavedReportBuilder(const RunSummary& summary)
    : builder_(summary.thresholds), values_(summary.values) {
  // Audit::report() declares its nodes in execution order first; the report's node order, and
  // with it the node where NaN/Inf started (find_origin), follow from that order.
  for (const ArchitectureNode& n : summary.architecture.nodes) builder_.declare(n.id);
}

RunVisitor SavedReportBuilder::visitor(std::function<void(const Record&)> also) {
  RunVisitor v;
  if (also)
    v.record = [this, also = std::move(also)](const Record& r) {
      builder_.add(r);
      also(r);
    };
  else
    v.record = [this](const Record& r) { builder_.add(r); };
  v.channel = [this](const ChannelRecord& c) { builder_.add(c); };
  v.similarity = [this](const SimilarityRecord& s) { builder_.add(s); };
  v.attention = [this](const AttentionRecord& a) { builder_.add(a); };
  v.scalar = [this](const StepScalar& x) { builder_.add(x); };
  return v;
}

Report SavedReportBuilder::build() const {
  Report report = builder_.build();
  apply_node_values(report, values_);
  return report;
}

}  // namespace gradscope
