#include "html_report.h"

#include <filesystem>
#include <optional>

#include "chart_libraries.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/html/report.h"
#include "gradscope/io/render/run_report.h"
#include "gradscope/io/trees/store.h"

namespace gradscope::cli {

namespace {

// The verdict `gradscope report` prints for `run`, without its "verdict: " lead.
std::string verdict_of(const LoadedRun& run) {
  const std::optional<EmbeddingRunSummary> embedding = load_embedding_summary(run.path);
  const std::optional<TreeRunSummary> trees = load_tree_summary(run.path);
  std::string v = render_run_verdict(run.report, run.flow, embedding ? &*embedding : nullptr, trees ? &*trees : nullptr);
  const std::string lead = "verdict: ";
  return v.compare(0, lead.size(), lead) == 0 ? v.substr(lead.size()) : v;
}

}  // namespace

int write_html_report(const LoadedRun& run, const std::string& output, const std::string& spec_dir,
                      const LoadedRun* beside) {
  const std::optional<EmbeddingRunSummary> embedding = load_embedding_summary(run.path);
  const std::optional<TreeRunSummary> trees = load_tree_summary(run.path);
  HtmlReportInput in =
      html_report_input(run, embedding ? &*embedding : nullptr, trees ? &*trees : nullptr);
  BesideRun other;
  if (beside) {
    other.name = beside->meta.name.empty() ? beside->path : beside->meta.name;
    other.scalars = &beside->scalars;
    other.verdict = verdict_of(*beside);
    in.beside = &other;
  }
  const std::optional<compress::MeasuredComparison> compression = load_measured_comparison(run.path);
  in.compression = compression ? &*compression : nullptr;
  const ChartLibraries libraries{web::chart_bundle_js(), web::versions()};
  const std::filesystem::path out(output);
  if (out.has_parent_path()) std::filesystem::create_directories(out.parent_path());
  const std::vector<Chart> charts = build_charts(in);
  write_text_file(out.string(), render_html(in, charts, libraries));
  if (!spec_dir.empty()) {
    std::filesystem::create_directories(spec_dir);
    for (const Chart& c : charts) write_text_file((std::filesystem::path(spec_dir) / (c.name + ".json")).string(), c.spec + "\n");
  }
  return static_cast<int>(charts.size());
}

}  // namespace gradscope::cli
