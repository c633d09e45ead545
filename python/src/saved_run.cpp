// read_run: RunReader + SavedReportBuilder, the same pass `gradscope report` makes.
#include "saved_run.h"

#include "gradscope/core/error.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/saved_report.h"

namespace gradscope::python {

SavedRun read_run(const std::string& path, bool partial, bool with_records) {
  RunReader reader(path, ReadOptions{partial});
  if (reader.step_count() == 0) throw Error("run '" + path + "': no steps recorded");
  SavedRun run;
  run.path = path;
  run.meta = reader.metadata();
  run.summary = reader.summary();
  SavedReportBuilder builder(run.summary);
  run.steps = reader.for_each(builder.visitor([&](const Record& r) {
    if (with_records) run.records.push_back(r);
  }));
  run.report = builder.build();
  run.warnings = reader.warnings();
  return run;
}

}  // namespace gradscope::python
