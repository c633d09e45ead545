// gradscope report RUN: the node table with flags, the gradient-flow health, the embedding
// tables' findings when the run saved them, and what to do; for a tree run (trees.json), the
// round timeline and the tree findings instead of the node table. Exit 1 when the run is
// unhealthy, so a CI job can gate on it.
#include <iostream>

#include "commands.h"
#include "report_text.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

struct ReportOptions {
  std::string run;
  bool json = false, csv = false, partial = false;
};

int run_report(const ReportOptions& opt) {
  const LoadedRun run = load_run(opt.run, opt.partial, {}, false, /*frames=*/false);
  const RunReports reports = render_run_reports(run);
  std::cout << (opt.json ? reports.json : opt.csv ? reports.csv : reports.text);
  return reports.unhealthy ? kExitUnhealthy : kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Show a saved run's nodes, flags and gradient-flow health (exit 1 when unhealthy)");
  cmd->add_option("RUN", opt->run, "run directory (or its run.db)")->required();
  auto* json = cmd->add_flag("--json", opt->json, "one JSON document (run, report, gradient flow, and every finding in the agent schema)");
  cmd->add_flag("--csv", opt->csv, "one CSV row per node")->excludes(json);
  add_partial_flag(cmd, opt->partial);
  cmd->callback([opt, &exit_code] { exit_code = run_report(*opt); });
}

}  // namespace gradscope::cli
