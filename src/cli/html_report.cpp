#include "html_report.h"

#include <filesystem>
#include <optional>

#include "chart_libraries.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/html/report.h"
#include "gradscope/io/trees/store.h"

namespace gradscope::cli {

int write_html_report(const LoadedRun& run, const std::string& output, const std::string& spec_dir) {
  const std::optional<EmbeddingRunSummary> embedding = load_embedding_summary(run.path);
  const std::optional<TreeRunSummary> trees = load_tree_summary(run.path);
  HtmlReportInput in =
      html_report_input(run, embedding ? &*embedding : nullptr, trees ? &*trees : nullptr);
  const std::optional<compress::MeasuredComparison> compression = load_measured_comparison(run.path);
  in.compression = compression ? &*compression : nullptr;
  const ChartLibraries libraries{web::vega_js(), web::vega_lite_js(), web::vega_embed_js(), web::versions()};
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
