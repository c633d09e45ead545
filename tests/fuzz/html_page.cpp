#include "html_page.h"

#include "gradscope/io/html/report.h"
#include "html_report.h"

namespace gradscope::fuzz {

std::string render_html_page(const cli::LoadedRun& run, const EmbeddingRunSummary* embedding) {
  const HtmlReportInput in = cli::html_report_input(run, embedding);
  const ChartLibraries libraries{"/* vega, vega-lite, vega-embed */", "stand-ins"};
  const std::vector<Chart> charts = build_charts(in);
  std::string page = render_html(in, charts, libraries);
  for (const Chart& c : charts) page += c.spec;  // what --spec would write
  return page;
}

}  // namespace gradscope::fuzz
