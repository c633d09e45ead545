// Golden files for the heatmap, the flow exports and the run report; round trips of hostile
// node names through CSV and JSON; the live heatmap's redraw rate.
// Regenerate after an intended change: GRADSCOPE_UPDATE_GOLDEN=1 ./io_tests
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gradscope/core/audit/rules.h"
#include "golden_util.h"
#include "gradscope/io/render/flow_export.h"
#include "gradscope/io/render/heatmap.h"
#include "gradscope/io/render/run_report.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;

Stats grad(double l2, int64_t count = 4) {
  Stats s;
  s.count = s.finite = count;
  s.sum_sq = l2 * l2;
  s.sum = s.sum_abs = l2;
  s.min = -l2 / 2;
  s.max = s.max_abs = l2;
  return s;
}

// Twelve steps of three nodes: a healthy head, a trunk that fades to vanishing, and a layer
// that explodes once and has a NaN once.
Timeline sample_timeline(std::size_t max_frames = 0) {
  Timeline tl({}, max_frames);
  for (int step = 0; step < 12; ++step) {
    tl.add({step, "trunk.0", Site::kParamGrad, grad(std::pow(10.0, -step))});
    Stats mid = grad(step == 6 ? 4e3 : 0.5 + 0.1 * step);
    if (step == 9) {
      mid.count += 1;
      mid.nan = 1;
    }
    tl.add({step, "trunk.1", Site::kParamGrad, mid});
    tl.add({step, "head", Site::kParamGrad, grad(1.0)});
  }
  tl.finish();
  return tl;
}

using test::expect_golden;

TEST(Heatmap, FlowLinearGolden) { expect_golden("heatmap_flow_linear.txt", render_heatmap(sample_timeline(), {})); }

TEST(Heatmap, NormLogColourGolden) {
  HeatmapOptions o;
  o.metric = HeatmapMetric::kGradNorm;
  o.scale = HeatmapScale::kLog;
  o.color = true;
  expect_golden("heatmap_norm_log_color.txt", render_heatmap(sample_timeline(), o));
}

TEST(Heatmap, ColumnsAreResampledToTheWidth) {
  Timeline tl;
  for (int step = 0; step < 1000; ++step) tl.add({step, "a", Site::kParamGrad, grad(step == 500 ? 9.0 : 1.0)});
  tl.add({1000, "b", Site::kParamGrad, grad(1.0)});
  tl.finish();
  HeatmapOptions o;
  o.metric = HeatmapMetric::kGradNorm;
  o.width = 60;
  const std::string out = render_heatmap(tl, o);
  std::istringstream lines(out);
  std::string line;
  std::getline(lines, line);
  EXPECT_THAT(line, HasSubstr("1001 frames, up to 19 per column"));
  std::getline(lines, line);  // row "a": 60 - 4 (name) - 3 (" |", "|") = 53 columns
  const auto bar = line.find('|');
  const std::string cells = line.substr(bar + 1, line.rfind('|') - bar - 1);
  std::size_t glyphs = 0, full = 0;
  for (std::size_t i = 0; i < cells.size();) {
    const bool wide = static_cast<unsigned char>(cells[i]) >= 0x80;
    full += cells.compare(i, 3, "█") == 0;
    i += wide ? 3 : 1;
    ++glyphs;
  }
  EXPECT_EQ(glyphs, 53u);
  EXPECT_EQ(full, 1u);  // the spike at step 500 survives resampling as the column maximum
  std::size_t width = 0;
  for (unsigned char c : line) width += (c & 0xc0) != 0x80;
  EXPECT_EQ(width, 60u);
}

TEST(Heatmap, EmptyTimelineSaysSo) {
  EXPECT_EQ(render_heatmap(Timeline{}, {}), "gradient flow: no steps recorded\n");
}

TEST(Heatmap, ParsesMetricNames) {
  EXPECT_EQ(parse_heatmap_metric("norm"), HeatmapMetric::kGradNorm);
  EXPECT_EQ(parse_heatmap_metric("max_abs_grad"), HeatmapMetric::kMaxAbsGrad);
  EXPECT_THROW(parse_heatmap_metric("loss"), Error);
}

TEST(LiveHeatmap, RedrawsInPlaceAtMostAtTheGivenRate) {
  using namespace std::chrono;
  steady_clock::time_point now{};
  std::ostringstream out;
  LiveHeatmap live(out, {}, 4, [&] { return now; });  // at most every 250 ms
  const Timeline tl = sample_timeline();
  int draws = 0;
  for (int i = 0; i < 100; ++i) {  // 100 updates over one second
    draws += live.update(tl);
    now += milliseconds(10);
  }
  EXPECT_EQ(draws, 4);
  const std::string text = out.str();
  const std::string one = render_heatmap(tl, {});
  const int lines = static_cast<int>(std::count(one.begin(), one.end(), '\n'));
  EXPECT_EQ(text.substr(0, one.size()), one);  // first drawing: no cursor movement
  EXPECT_THAT(text, HasSubstr("\x1b[" + std::to_string(lines) + "F\x1b[J" + one));
}

TEST(FlowExport, FramesJsonGolden) { expect_golden("frames.json", render_frames_json(sample_timeline())); }
TEST(FlowExport, FramesCsvGolden) { expect_golden("frames.csv", render_frames_csv(sample_timeline())); }

TEST(FlowExport, RecordJsonlGolden) {
  Stats s = grad(2.0);
  s.count += 2;
  s.nan = 1;
  s.neg_inf = 1;
  std::string out = record_jsonl({7, "enc/attn", Site::kOutputGrad, s});
  out += record_jsonl({8, "empty", Site::kParam, Stats{}});  // min/max infinite -> null
  expect_golden("records.jsonl", out);
}

TEST(FlowExport, FramesJsonFollowsTheIssueFormatWithNullForNonFinite) {
  const auto doc = nlohmann::json::parse(render_frames_json(sample_timeline()));
  ASSERT_EQ(doc.size(), 12u);
  EXPECT_EQ(doc[9]["step"], 9);
  const auto& nan_layer = doc[9]["layers"][1];
  EXPECT_EQ(nan_layer["name"], "trunk.1");
  EXPECT_TRUE(nan_layer["grad_norm"].is_null());
  EXPECT_EQ(nan_layer["is_exploding"], true);
  EXPECT_EQ(doc[6]["layers"][1]["flow_intensity"], 1.0);
  for (const char* key : {"name", "mean_abs_grad", "max_abs_grad", "grad_norm", "is_vanishing", "is_exploding",
                          "flow_intensity"})
    EXPECT_TRUE(doc[0]["layers"][0].contains(key)) << key;
}

// RFC 4180 reader, enough for the round trip.
std::vector<std::vector<std::string>> parse_csv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1, std::vector<std::string>(1));
  bool quoted = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') rows.back().back() += '"', ++i;
      else if (c == '"') quoted = false;
      else rows.back().back() += c;
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      rows.back().emplace_back();
    } else if (c == '\n') {
      rows.emplace_back(1);
    } else {
      rows.back().back() += c;
    }
  }
  if (rows.back().size() == 1 && rows.back()[0].empty()) rows.pop_back();
  return rows;
}

TEST(FlowExport, HostileNodeNamesSurviveCsvAndJsonRoundTrips) {
  const std::vector<std::string> names = {"a,b", "say \"hi\"", "two\nlines\r\n", "ünï/→", "\"", ""};
  Timeline tl;
  for (const std::string& n : names) tl.add({0, n, Site::kParamGrad, grad(1.0)});
  tl.finish();
  const auto rows = parse_csv(render_frames_csv(tl));
  ASSERT_EQ(rows.size(), names.size() + 1);
  const auto frames = nlohmann::json::parse(render_frames_json(tl));
  for (std::size_t i = 0; i < names.size(); ++i) {
    ASSERT_EQ(rows[i + 1].size(), 7u);
    EXPECT_EQ(rows[i + 1][1], names[i]);
    EXPECT_EQ(frames[0]["layers"][i]["name"], names[i]);
    EXPECT_EQ(nlohmann::json::parse(record_jsonl({0, names[i], Site::kParamGrad, grad(1.0)}))["node"], names[i]);
  }
  // The heatmap escapes control characters so the grid stays aligned.
  EXPECT_THAT(render_heatmap(tl, {}), HasSubstr("two\\nlines\\r\\n"));
}

RunMetadata sample_meta() {
  RunMetadata m;
  m.name = "exp1";
  m.start_time = "2026-12-02T10:31:07Z";
  m.end_time = "2026-12-02T10:41:00Z";
  m.host = "trainer-7";
  m.command_line = "train --lr 0.1";
  m.gradscope_version = "0.1.0";
  return m;
}

Report sample_report() {
  ReportBuilder b;
  for (int step = 0; step < 12; ++step) {
    b.add({step, "trunk.0", Site::kParamGrad, grad(1e-9)});
    b.add({step, "head", Site::kParamGrad, grad(1.0)});
  }
  return b.build();
}

TEST(RunReport, FlowSummaryGolden) {
  expect_golden("flow_summary.txt",
                render_run_header(sample_meta(), "runs/exp1") + render_flow_summary(summarize_flow(sample_timeline())));
}

TEST(RunReport, JsonGolden) {
  expect_golden("run_report.json", render_run_json(sample_meta(), sample_report(), summarize_flow(sample_timeline())));
}

TEST(RunReport, UnhealthyWhenRulesFlagOrFlowHasProblems) {
  const FlowSummary sick = summarize_flow(sample_timeline());
  EXPECT_EQ(sick.health, FlowHealth::kProblemsDetected);  // 5 of 12 frames, one explosion
  Report healthy;
  EXPECT_TRUE(run_unhealthy(healthy, sick));
  FlowSummary minor;
  minor.health = FlowHealth::kMinorIssues;
  EXPECT_FALSE(run_unhealthy(healthy, minor));
  EXPECT_TRUE(run_unhealthy(sample_report(), minor));  // trunk.0 is VANISHING by the rules
}

// What a terminal would act on (ESC, BEL, DEL, C1 as UTF-8 and raw, bidi), and how it is shown.
const std::string kHostile = "x\x1b[2J\xc2\x9b\u202e\x07\x7f\x9b";
const std::string kShown = "x\\x1b[2J\\u009b\\u202e\\x07\\x7f\\x9b";

TEST(Heatmap, ShowsTerminalControlsInNamesEscapedAndKeepsItsColours) {
  Timeline tl;
  for (int step = 0; step < 3; ++step) {
    tl.add({step, kHostile, Site::kParamGrad, grad(1e-9)});  // vanishing: drawn blue
    tl.add({step, "head", Site::kParamGrad, grad(1.0)});
  }
  tl.finish();
  HeatmapOptions o;
  o.color = true;
  o.width = 120;  // room for the whole escaped name
  const std::string map = render_heatmap(tl, o);
  EXPECT_THAT(map, HasSubstr("\n" + kShown + " |\x1b[34m"));
  EXPECT_THAT(map, HasSubstr("\nhead" + std::string(kShown.size() - 4, ' ') + " |"));
  // The only escape sequences left are the heatmap's own colours.
  std::size_t escapes = 0, colours = 0;
  for (std::size_t i = map.find('\x1b'); i != std::string::npos; i = map.find('\x1b', i + 1)) ++escapes;
  for (const char* c : {"\x1b[34m", "\x1b[0m"})
    for (std::size_t i = map.find(c); i != std::string::npos; i = map.find(c, i + 1)) ++colours;
  EXPECT_EQ(escapes, colours) << map;
  for (const char* raw : {"\x07", "\x7f", "\x9b", "\u202e"}) EXPECT_EQ(map.find(raw), std::string::npos) << raw;
}

TEST(RunReport, HeaderShowsEveryMetadataFieldEscaped) {
  RunMetadata m;
  m.name = "n" + kHostile;
  m.start_time = "s" + kHostile;
  m.end_time = "e" + kHostile;
  m.host = "h" + kHostile;
  m.command_line = "c" + kHostile;
  m.gradscope_version = "v" + kHostile;
  EXPECT_EQ(render_run_header(m, "runs/" + kHostile),
            "run runs/" + kShown + ": n" + kShown + ", started s" + kShown + ", ended e" + kShown + ", host h" +
                kShown + ", gradscope v" + kShown + "\ncommand: c" + kShown + "\n\n");
}

TEST(RunReport, FlowSummaryShowsNamesInRecommendationsEscaped) {
  Timeline tl;
  for (int step = 0; step < 3; ++step) tl.add({step, kHostile, Site::kParamGrad, grad(1e-9)});
  tl.finish();
  const std::string text = render_flow_summary(summarize_flow(tl));
  EXPECT_THAT(text, HasSubstr("\n  - " + kShown + ": gradient L2 < 1e-07 in 3 of 3 frames since step 0"));
  EXPECT_EQ(text.find('\x1b'), std::string::npos) << text;
}

TEST(RunReport, EmbeddingFindingsAndVerdictShowSavedTextEscaped) {
  EmbeddingRunSummary summary;
  EmbeddingTableSummary table;
  table.report.layer = "item" + kHostile;
  table.report.stats.num_embeddings = 40;
  table.report.stats.active_coverage_pct = 75;
  table.report.stats.popularity_gini = 0.288;
  EmbeddingDiagnostic d;
  d.type = "ZOMBIE" + kHostile;
  d.premise = "p" + kHostile;
  d.action = "a" + kHostile;
  table.report.diagnostics = {d};
  summary.tables = {table};
  EXPECT_EQ(render_embedding_findings(summary),
            "\nembedding tables:\n  item" + kShown + " (40 rows, 75.0% exposed, popularity Gini 0.288): 1 finding\n"
            "    ZOMBIE" + kShown + " (confidence 0.00): p" + kShown + "\n      what to do: a" + kShown + "\n");
  EXPECT_EQ(embedding_verdict(&summary), "; embedding: item" + kShown + " [ZOMBIE" + kShown + "]");
}

// Every row a finding names is in the run; the text shows the first 20 and says where the rest
// are (a 1M-row table's finding can name thousands).
TEST(RunReport, EmbeddingFindingsShowTheirFirstRowsAndWhereTheRestAre) {
  EmbeddingRunSummary summary;
  EmbeddingTableSummary table;
  table.report.layer = "item";
  EmbeddingDiagnostic d;
  d.type = "ZOMBIE_ROWS";
  d.rows = {3, 9};
  table.report.diagnostics = {d};
  summary.tables = {table};
  EXPECT_THAT(render_embedding_findings(summary), HasSubstr("\n      rows: 3, 9\n"));
  for (int64_t r = 10; r < 40; ++r) d.rows.push_back(r);
  summary.tables[0].report.diagnostics = {d};
  EXPECT_THAT(render_embedding_findings(summary),
              HasSubstr("\n      rows: 3, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, "
                        "... (32 in all: every one in the run's embedding document (run.db), written out by "
                        "gradscope export RUN --format documents)\n"));
}

TEST(FlowExport, FramesCsvNeutralisesFormulaNames) {
  Timeline tl;
  for (const char* n : {"=1+2", "-x", "+x", "@x", "a-b"}) tl.add({0, n, Site::kParamGrad, grad(0.5)});
  tl.finish();
  EXPECT_EQ(render_frames_csv(tl),
            "step,layer,mean_abs_grad,max_abs_grad,grad_norm,is_vanishing,is_exploding\n"
            "0,\"'=1+2\",0.125,0.5,0.5,0,0\n"
            "0,\"'-x\",0.125,0.5,0.5,0,0\n"
            "0,\"'+x\",0.125,0.5,0.5,0,0\n"
            "0,\"'@x\",0.125,0.5,0.5,0,0\n"
            "0,a-b,0.125,0.5,0.5,0,0\n");
}

}  // namespace
}  // namespace gradscope
