// SavedReportBuilder: the report of a saved run, built the way the audit built it in memory:
// its thresholds, its nodes in execution order, every record, channel record and similarity
// record, and the per-node values no record holds (gradient SNR).
//
//   gradscope::RunReader run("runs/exp1");
//   gradscope::SavedReportBuilder b(run.summary());
//   run.for_each(b.visitor());
//   gradscope::Report report = b.build();   // == audit.report() of the audit that wrote the run
#pragma once

#include "gradscope/core/audit/rules.h"
#include "gradscope/core/audit/run_sink.h"
#include "gradscope/io/store/run_reader.h"

namespace gradscope {

class SavedReportBuilder {
 public:
  /// Declares the summary's architecture nodes, in order, before any record arrives.
  explicit SavedReportBuilder(const RunSummary& summary);

  void add(const Record& record) { builder_.add(record); }
  void add(const ChannelRecord& record) { builder_.add(record); }
  void add(const SimilarityRecord& record) { builder_.add(record); }
  /// A visitor that adds every kind of item (and, per record, calls `also` when given).
  RunVisitor visitor(std::function<void(const Record&)> also = {});
  /// ReportBuilder::build, then the summary's per-node values.
  Report build() const;

 private:
  ReportBuilder builder_;
  std::vector<NodeValue> values_;
};

}  // namespace gradscope
