#include "html_page.h"

#include "gradscope/io/html.h"

namespace gradscope::fuzz {

std::string render_html_page(const cli::LoadedRun& run, const EmbeddingRunSummary* embedding) {
  HtmlReportInput in;
  in.run_path = run.path;
  in.meta = &run.meta;
  in.report = &run.report;
  in.timeline = &run.timeline;
  in.flow = &run.flow;
  in.series = &run.series;
  in.embedding = embedding;
  const ChartLibraries libraries{"/* vega */", "/* vega-lite */", "/* vega-embed */", "stand-ins"};
  const std::vector<Chart> charts = build_charts(in);
  std::string page = render_html(in, charts, libraries);
  for (const Chart& c : charts) page += c.spec;  // what --spec would write
  return page;
}

}  // namespace gradscope::fuzz
