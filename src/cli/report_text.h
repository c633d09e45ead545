// What `gradscope report` prints for a saved run, in each of its formats, shared with the
// TensorBoard export (its gradscope/report text) and the demo (the report files it writes beside
// each run), so that none of them drifts from the command.
#pragma once

#include <string>
#include <vector>

#include "gradscope/io/embedding/store.h"
#include "gradscope/io/trees/store.h"
#include "run_loading.h"

namespace gradscope::cli {

/// "auto-fix log (N acts):" and per table and act type its count, steps and rows changed;
/// "" for no lines. Lines that are not acts (no layer, type or step) are counted apart.
std::string render_auto_fix_log(const std::vector<std::string>& lines);

/// The run header, the audit's warnings, the node table (or a tree run's timeline and
/// findings), the gradient flow, the embedding findings, the auto-fix log and the run's verdict.
std::string render_report_text(const LoadedRun& run, const EmbeddingRunSummary* embedding,
                               const TreeRunSummary* trees);

/// `gradscope report RUN` as text, with --json and with --csv, and the run's one verdict (its
/// exit status): the embedding and tree documents are read from the run's folder.
struct RunReports {
  std::string text, json, csv;
  bool unhealthy = false;
  bool tree_run = false;  ///< judged by its trees, not by a node table: no report.csv
};
RunReports render_run_reports(const LoadedRun& run);

/// Writes report.txt, report.json and, for a run judged by its node table (not a tree run),
/// report.csv beside the saved run in `dir`: render_run_reports of the run loaded as
/// `gradscope report` loads it. Returns them.
RunReports write_run_reports(const std::string& dir);

}  // namespace gradscope::cli
