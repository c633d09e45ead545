// The HTML report of a run: one self-contained file that works offline and can be shared.
//
//   gradscope::HtmlReportInput in;
//   in.meta = &meta; in.report = &report; in.timeline = &timeline; in.flow = &flow;
//   in.series = &series;                  // SeriesBuilder::finish()
//   in.embedding = &embedding;            // optional: load_embedding_summary(run)
//   std::ofstream("report.html") << gradscope::render_html(in, libraries);
//   const std::vector<gradscope::Chart> charts = gradscope::build_charts(in);   // or, for both:
//   for (const gradscope::Chart& c : charts) save(c.name + ".json", c.spec);
//   std::ofstream("report.html") << gradscope::render_html(in, charts, libraries);
//
// Charts are Vega-Lite specs with their data inline; the page inlines the chart libraries
// (vega, vega-lite, vega-embed, given by the caller: the gradscope command builds them in),
// so it makes no network request. Every string from a run (node names, metadata, layers) is
// escaped for where it lands: HTML text and attributes, JSON inside <script> (with <, >, &,
// U+2028 and U+2029 as \u escapes), and the page's Content-Security-Policy lets only the
// page's own scripts (by nonce) run, so an injected handler would not run even if escaping
// failed. The page sets document.documentElement.dataset.gradscope to "rendered" once every
// chart has drawn, or "error: <message>" (browser tests wait for it).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "gradscope/core/attention/rules.h"
#include "gradscope/core/series/rules.h"
#include "gradscope/core/audit/architecture.h"
#include "gradscope/core/compress/recipe.h"
#include "gradscope/core/audit/report.h"
#include "gradscope/core/audit/series.h"
#include "gradscope/core/audit/timeline.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/store/run_metadata.h"
#include "gradscope/io/trees/store.h"

namespace gradscope {

/// The chart libraries' browser script (Vega, Vega-Lite, vega-embed), inlined into the page as
/// given.
struct ChartLibraries {
  std::string_view bundle;    ///< sets window.vega, window.vegaLite and window.vegaEmbed
  std::string_view versions;  ///< shown in the page footer, e.g. "vega 6.2.0, ..."
};

/// Another run drawn beside the report's in its Loss section (`gradscope html RUN --beside
/// OTHER`): a blow-up next to its clipped twin, a run next to the one it should match.
struct BesideRun {
  std::string name;                                 ///< as the page labels it
  const std::vector<StepScalar>* scalars = nullptr;  ///< its loss and gradient norms, drawn
  std::string verdict;                              ///< its verdict line, as its own report says it
};

/// What the report shows. meta, report, timeline, flow and series are required; embedding
/// and trees are optional (null: the run has no embedding tables, is not a tree run).
struct HtmlReportInput {
  std::string run_path;
  const RunMetadata* meta = nullptr;
  const Report* report = nullptr;
  const Timeline* timeline = nullptr;
  const FlowSummary* flow = nullptr;
  const std::vector<NodeSeries>* series = nullptr;
  /// Optional: the run's attention records (AttentionHistory), drawn as entropy per head over
  /// steps and the largest logit per node.
  const std::vector<AttentionRecord>* attention = nullptr;
  /// Optional: the run's per-step scalars (ScalarHistory: the loss, the gradient norms), drawn
  /// with the report's spikes and divergence marked.
  const std::vector<StepScalar>* scalars = nullptr;
  /// Optional: a second run's loss and gradient norms, drawn as lines of their own in the Loss
  /// section (this run's spikes and divergence stay the ones marked).
  const BesideRun* beside = nullptr;
  const EmbeddingRunSummary* embedding = nullptr;
  /// Optional: a tree run's analysis (load_tree_summary). The page then shows its rounds in
  /// place of the gradient-flow, node and over-steps sections, which a tree run has no data for.
  const TreeRunSummary* trees = nullptr;
  /// Optional: compressed variants of the model as measured (compression.json; docs/compression.md).
  const compress::MeasuredComparison* compression = nullptr;
  /// Optional: what the audit saved with the run (its architecture and warnings), shown in the
  /// "Model" section when it holds either.
  const Architecture* architecture = nullptr;
  const std::vector<std::string>* warnings = nullptr;
  /// Heatmap columns: evenly chosen frames when the timeline holds more.
  int max_heatmap_steps = 300;
};

/// One chart: a file-name-safe name ([a-z0-9-]), a title, and its Vega-Lite spec as JSON.
struct Chart {
  std::string name, title, spec;
};

/// Every chart of the report, in page order. Throws Error when a required input is null.
std::vector<Chart> build_charts(const HtmlReportInput& input);

/// The whole page. Throws Error when a required input is null or a library is empty.
std::string render_html(const HtmlReportInput& input, const ChartLibraries& libraries);
/// The same page from charts already built by build_charts(input) (e.g. also saved as specs).
std::string render_html(const HtmlReportInput& input, const std::vector<Chart>& charts,
                        const ChartLibraries& libraries);

/// `text` escaped for HTML text and quoted attribute values (& < > " ').
std::string html_escape(std::string_view text);

/// `json` made safe inside <script>: <, >, & and U+2028/U+2029 as \u escapes (the JSON value
/// is unchanged). `json` must be valid JSON text.
std::string json_for_script(std::string_view json);

/// `code` made safe inside <script>: "</script" and "<!--" cannot end or confuse the element.
std::string script_for_html(std::string_view code);

}  // namespace gradscope
