// A saved run read back for Python: its metadata, the report over every committed step (as
// `gradscope report` builds it), the audit's summary and, on request, the records.
//
//   gradscope::python::SavedRun run = gradscope::python::read_run("runs/exp1", false, true);
//   std::cout << run.steps << " steps, " << run.report.nodes.size() << " nodes\n";
#pragma once

#include <string>
#include <vector>

#include "gradscope/core/vocabulary/record.h"
#include "gradscope/core/audit/report.h"
#include "gradscope/core/audit/run_sink.h"
#include "gradscope/io/store/run_metadata.h"

namespace gradscope::python {

struct SavedRun {
  std::string path;
  RunMetadata meta;
  Report report;
  int64_t steps = 0;
  RunSummary summary;            ///< architecture, the audit's warnings, per-node values
  std::vector<Record> records;  ///< empty unless asked for
  std::vector<std::string> warnings;  ///< what a partial read skipped
};

/// Reads `path` (a run directory or its run.db). Throws Error naming the file as RunReader
/// does, and "run '<path>': no steps recorded" for an empty run.
SavedRun read_run(const std::string& path, bool partial, bool with_records);

}  // namespace gradscope::python
