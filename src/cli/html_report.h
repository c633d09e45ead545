// Writing a saved run's HTML report, shared by `gradscope html` and `gradscope demo`.
#pragma once

#include <string>

#include "gradscope/io/html/report.h"
#include "run_loading.h"

namespace gradscope::cli {

/// What the report shows of `run`, `embedding` and `trees` (null: the run has none); the result
/// points into all three. Inline, so that the fuzz targets render the same page without the
/// chart libraries this file's .cpp builds in.
inline HtmlReportInput html_report_input(const LoadedRun& run, const EmbeddingRunSummary* embedding,
                                         const TreeRunSummary* trees = nullptr) {
  HtmlReportInput in;
  in.run_path = run.path;
  in.meta = &run.meta;
  in.report = &run.report;
  in.timeline = &run.timeline;
  in.flow = &run.flow;
  in.series = &run.series;
  in.attention = &run.attention;
  in.scalars = &run.scalars;
  in.embedding = embedding;
  in.trees = trees;
  in.architecture = &run.summary.architecture;
  in.warnings = &run.summary.warnings;
  return in;
}

/// Renders `run` (and <run>/embedding.json, <run>/trees.json when present) into `output`, a
/// self-contained page with the chart libraries built into this binary. With `spec_dir`, also
/// writes each chart's Vega-Lite spec there as <chart>.json. Returns the number of charts. Throws
/// Error naming a file that cannot be written. With `beside` (loaded with series), that run's
/// loss and gradient norms are drawn beside this one's, with its verdict.
int write_html_report(const LoadedRun& run, const std::string& output, const std::string& spec_dir = {},
                      const LoadedRun* beside = nullptr);

}  // namespace gradscope::cli
