// gradscope report RUN: the node table with flags, the gradient-flow health, the embedding
// tables' findings when the run saved them, and what to do; for a tree run (trees.json), the
// round timeline and the tree findings instead of the node table. Exit 1 when the run is
// unhealthy, so a CI job can gate on it.
#include <iostream>
#include <optional>

#include "commands.h"
#include "gradscope/io/csv.h"
#include "gradscope/io/embedding_store.h"
#include "gradscope/io/run_report.h"
#include "gradscope/io/safe_text.h"
#include "gradscope/io/table.h"
#include "gradscope/io/tree_text.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

struct ReportOptions {
  std::string run;
  bool json = false, csv = false, partial = false;
};

int run_report(const ReportOptions& opt) {
  const LoadedRun run = load_run(opt.run, opt.partial, {}, false, /*frames=*/false);
  const std::optional<EmbeddingRunSummary> saved = load_embedding_summary(run.path);
  const EmbeddingRunSummary* embedding = saved ? &*saved : nullptr;
  const std::optional<TreeRunSummary> tree_run = load_tree_summary(run.path);
  const TreeRunSummary* trees = tree_run ? &*tree_run : nullptr;
  if (opt.json) {
    std::cout << render_run_json(run.meta, run.report, run.flow, embedding, trees);
  } else if (opt.csv) {
    std::cout << render_csv(run.report);
  } else {
    std::cout << render_run_header(run.meta, run.path);
    // What the audit warned about while it ran (stderr then), kept with the run.
    for (const std::string& w : run.summary.warnings) std::cout << "audit warning: " << terminal_text(w) << "\n";
    // A tree run's nodes are rounds, features and losses: the tree rules judge them.
    if (trees)
      std::cout << render_tree_timeline(*trees) << render_tree_findings(*trees);
    else
      std::cout << render_table(run.report, false) << render_flow_summary(run.flow);
    if (embedding) std::cout << render_embedding_findings(*embedding);
    // The node table's own verdict would speak for the nodes only: the run's comes last.
    std::cout << "\n" << render_run_verdict(run.report, run.flow, embedding, trees) << "\n";
  }
  return run_unhealthy(run.report, run.flow, embedding, trees) ? kExitUnhealthy : kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<ReportOptions>();
  CLI::App* cmd = app.add_subcommand(
      "report", "Show a saved run's nodes, flags and gradient-flow health (exit 1 when unhealthy)");
  cmd->add_option("RUN", opt->run, "run directory (or its run.db)")->required();
  auto* json = cmd->add_flag("--json", opt->json, "one JSON document (run, report, gradient flow)");
  cmd->add_flag("--csv", opt->csv, "one CSV row per node")->excludes(json);
  add_partial_flag(cmd, opt->partial);
  cmd->callback([opt, &exit_code] { exit_code = run_report(*opt); });
}

}  // namespace gradscope::cli
