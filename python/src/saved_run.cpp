// read_run: RunReader + ReportBuilder, the same pass `gradscope report` makes.
#include "saved_run.h"

#include "gradscope/core/error.h"
#include "gradscope/core/rules.h"
#include "gradscope/io/run_reader.h"

namespace gradscope::python {

SavedRun read_run(const std::string& path, bool partial, bool with_records) {
  RunReader reader(path, ReadOptions{partial});
  if (reader.step_count() == 0) throw Error("run '" + path + "': no steps recorded");
  SavedRun run;
  run.path = path;
  run.meta = reader.metadata();
  ReportBuilder builder(run.meta.thresholds);
  run.steps = reader.for_each([&](const Record& r) {
    builder.add(r);
    if (with_records) run.records.push_back(r);
  });
  run.report = builder.build();
  run.warnings = reader.warnings();
  return run;
}

}  // namespace gradscope::python
