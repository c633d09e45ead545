// The HTML report without a browser: escaping in every context, the charts' data as measured,
// the page's structure and its guards (CSP nonce, inlined libraries), and bad input.
// tests/browser opens the same pages in Chromium.
#include "gradscope/io/html/report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>
#include <regex>

#include "gradscope/core/error.h"
#include "gradscope/core/audit/rules.h"
#include "../common/stats_fixture.h"

namespace gradscope {
namespace {

using nlohmann::json;
using test::with_l2;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kHostile = "</script><img src=x onerror=alert(1)>";

// A run of `steps` steps over the given nodes; nodes named "dead..." get zero gradients.
struct Fixture {
  RunMetadata meta;
  Report report;
  Timeline timeline;
  FlowSummary flow;
  std::vector<NodeSeries> series;

  explicit Fixture(std::vector<std::string> nodes, int steps = 4) {
    meta.name = nodes.back();
    meta.start_time = "2026-12-02T10:00:00Z";
    meta.command_line = "train --name '" + nodes.back() + "'";
    ReportBuilder b;
    SeriesBuilder s;
    for (int step = 0; step < steps; ++step) {
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        const double g = nodes[i].rfind("dead", 0) == 0 ? 0.0 : 0.5 * (step + 1);
        for (const Record& r : {Record{step, nodes[i], Site::kActivation, with_l2(2.0, 4)},
                                Record{step, nodes[i], Site::kParamGrad, with_l2(g)},
                                Record{step, nodes[i], Site::kParam, with_l2(10.0)},
                                Record{step, nodes[i], Site::kUpdate, with_l2(0.01)}}) {
          b.add(r);
          timeline.add(r);
          s.add(r);
        }
      }
    }
    timeline.finish();
    report = b.build();
    flow = summarize_flow(timeline);
    series = s.finish();
  }
  HtmlReportInput input() const {
    HtmlReportInput in;
    in.run_path = "runs/" + meta.name;
    in.meta = &meta;
    in.report = &report;
    in.timeline = &timeline;
    in.flow = &flow;
    in.series = &series;
    return in;
  }
};

const ChartLibraries kLibs{"window.vega={};window.vegaLite={};window.vegaEmbed=function(){};", "test 1.0"};

const Chart& chart(const std::vector<Chart>& charts, const std::string& name) {
  for (const Chart& c : charts)
    if (c.name == name) return c;
  throw std::runtime_error("no chart " + name);
}

TEST(HtmlEscape, EscapesEveryHtmlSpecialCharacter) {
  EXPECT_EQ(html_escape("a<b>&\"c'"), "a&lt;b&gt;&amp;&quot;c&#39;");
  EXPECT_EQ(html_escape(""), "");
  EXPECT_EQ(html_escape("plain text"), "plain text");
}

TEST(HtmlEscape, JsonForScriptEscapesTagsAndLineTerminators) {
  const std::string in = "{\"a\":\"</script><!-- & \xE2\x80\xA8 \xE2\x80\xA9 \xE2\x80\xA6\"}";
  const std::string out = json_for_script(in);
  EXPECT_EQ(out, "{\"a\":\"\\u003c/script\\u003e\\u003c!-- \\u0026 \\u2028 \\u2029 \xE2\x80\xA6\"}");
  EXPECT_EQ(json::parse(out), json::parse(in));  // the same value
}

TEST(HtmlEscape, ScriptForHtmlDefusesClosingTagsInAnyCase) {
  EXPECT_EQ(script_for_html("var s='</script>';var t=\"</SCRIPT \";"),
            "var s='<\\/script>';var t=\"<\\/SCRIPT \";");
  EXPECT_EQ(script_for_html("a<!--b"), "a<\\!--b");
  EXPECT_EQ(script_for_html("x</scrip"), "x</scrip");  // too short to be the tag
  EXPECT_EQ(script_for_html("1<2&&a</b"), "1<2&&a</b");
}

// True when some "sort" in `spec` lists `value` (Vega-Lite compiles sort arrays into expressions).
bool sorts_by(const json& spec, const std::string& value) {
  if (spec.is_object()) {
    for (auto it = spec.begin(); it != spec.end(); ++it) {
      if (it.key() == "sort" && it.value().is_array())
        for (const json& v : it.value())
          if (v.is_string() && v.get<std::string>() == value) return true;
      if (sorts_by(it.value(), value)) return true;
    }
  } else if (spec.is_array()) {
    for (const json& v : spec)
      if (sorts_by(v, value)) return true;
  }
  return false;
}

TEST(HtmlCharts, NodeNamesNeverReachAVegaExpression) {
  // U+2028 in a sort array became a line break inside a compiled Vega expression (Chromium:
  // "Unexpected token ILLEGAL"); node order goes through scale domains instead.
  const std::string name = "a\xE2\x80\xA8" "b";  // split: "\xA8b" would be one escape
  const Fixture f({"fc1", name});
  for (const Chart& c : build_charts(f.input())) {
    const json spec = json::parse(c.spec);
    EXPECT_FALSE(sorts_by(spec, name)) << c.name;
    EXPECT_FALSE(sorts_by(spec, "fc1")) << c.name;
  }
  const json heatmap = json::parse(chart(build_charts(f.input()), "gradient-flow").spec);
  EXPECT_EQ(heatmap["encoding"]["y"]["scale"]["domain"], json::array({"fc1", name}));
}

TEST(HtmlCharts, EveryChartIsVegaLiteWithInlineData) {
  const Fixture f({"fc1", "dead"});
  const std::vector<Chart> charts = build_charts(f.input());
  std::vector<std::string> names;
  for (const Chart& c : charts) {
    names.push_back(c.name);
    EXPECT_TRUE(std::regex_match(c.name, std::regex("[a-z0-9-]+"))) << c.name;
    const json spec = json::parse(c.spec);
    EXPECT_THAT(spec["$schema"].get<std::string>(), HasSubstr("vega-lite"));
    EXPECT_THAT(c.spec, Not(HasSubstr("\"url\"")));  // nothing to fetch
  }
  EXPECT_EQ(names, (std::vector<std::string>{"gradient-flow", "module-flow", "node-diagram", "gradient-norm",
                                             "activations", "update-ratio"}));
}

TEST(HtmlCharts, HeatmapCellsAreTheTimelinesMeasures) {
  const Fixture f({"fc1", "dead"}, 4);
  const json values = json::parse(chart(build_charts(f.input()), "gradient-flow").spec)["data"]["values"];
  ASSERT_EQ(values.size(), 8u);  // 4 steps x 2 nodes
  EXPECT_EQ(values[2]["step"], 1);
  EXPECT_EQ(values[2]["node"], "fc1");
  EXPECT_DOUBLE_EQ(values[2]["grad_norm"].get<double>(), 1.0);
  EXPECT_EQ(values[2]["kind"], "finite");
  EXPECT_EQ(values[3]["kind"], "zero");
  EXPECT_EQ(values[3]["status"], "vanishing");
}

TEST(HtmlCharts, HeatmapThinsLongRunsToEvenlySpacedSteps) {
  const Fixture f({"fc1"}, 100);
  HtmlReportInput in = f.input();
  in.max_heatmap_steps = 10;
  const json spec = json::parse(chart(build_charts(in), "gradient-flow").spec);
  const json& values = spec["data"]["values"];
  ASSERT_EQ(values.size(), 10u);
  EXPECT_EQ(values.front()["step"], 0);
  EXPECT_EQ(values.back()["step"], 99);  // first and last step both shown
  EXPECT_EQ(values[1]["step"], 11);
  EXPECT_THAT(spec["title"]["subtitle"].get<std::string>(), HasSubstr("10 of 100 steps"));
}

TEST(HtmlCharts, NonFiniteNormsBecomeNullWithTheirKind) {
  Fixture f({"fc1"}, 1);
  Timeline tl;
  Stats nan = with_l2(1.0);
  nan.nan = 2;
  tl.add(Record{0, "fc1", Site::kParamGrad, nan});
  tl.finish();
  HtmlReportInput in = f.input();
  in.timeline = &tl;
  const json v = json::parse(chart(build_charts(in), "gradient-flow").spec)["data"]["values"][0];
  EXPECT_TRUE(v["grad_norm"].is_null());
  EXPECT_EQ(v["kind"], "NaN");
  EXPECT_EQ(v["status"], "exploding");
}

TEST(HtmlCharts, SeriesAndStaircaseCarryTheMeasuredValues) {
  const Fixture f({"fc1", "dead"}, 3);
  const std::vector<Chart> charts = build_charts(f.input());
  const json grad = json::parse(chart(charts, "gradient-norm").spec)["data"]["values"];
  ASSERT_EQ(grad.size(), 3u);  // zero norms cannot sit on a log axis
  EXPECT_DOUBLE_EQ(grad[2]["value"].get<double>(), 1.5);
  const json update = json::parse(chart(charts, "update-ratio").spec);
  EXPECT_DOUBLE_EQ(update["data"]["values"][0]["value"].get<double>(), 0.01 / 10.0);
  EXPECT_DOUBLE_EQ(update["layer"][1]["data"]["values"][0]["threshold"].get<double>(), 1e-6);
  const json act = json::parse(chart(charts, "activations").spec)["data"]["values"];
  EXPECT_EQ(act.size(), 3u * 2u * 4u);  // steps x nodes x measures
  const json diagram = json::parse(chart(charts, "node-diagram").spec);
  const json boxes = diagram["layer"][1]["data"]["values"];
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes[0]["health"], "healthy");
  EXPECT_EQ(boxes[1]["health"], "failing");
  EXPECT_EQ(diagram["layer"][0]["data"]["values"].size(), 1u);  // one arrow between two nodes
}

TEST(HtmlCharts, AttentionChartsCarryEachHeadsMeasuresAndTheFindings) {
  Fixture f({"attn"}, 4);
  std::vector<AttentionRecord> attention;
  ReportBuilder b;
  for (int64_t step = 0; step < 6; ++step) {
    HeadStats calm, sharp;
    calm.queries = calm.fraction_queries = sharp.queries = sharp.fraction_queries = 10;
    calm.max_logit = 2;
    calm.entropy_fraction_sum = 9;  // 0.9
    sharp.max_logit = step < 2 ? 3 : 400;
    sharp.entropy_fraction_sum = step < 2 ? 8 : 0.5;  // 0.8, then 0.05
    attention.push_back({step, "attn", {calm, sharp}});
    b.add(Record{step, "attn", Site::kParamGrad, with_l2(1)});
    b.add(attention.back());
  }
  f.report = b.build();
  HtmlReportInput in = f.input();
  in.attention = &attention;
  const std::vector<Chart> charts = build_charts(in);
  const json heat = json::parse(chart(charts, "attention-entropy").spec);
  const json cells = heat["data"]["values"];
  ASSERT_EQ(cells.size(), 12u);  // steps x heads
  EXPECT_EQ(cells[1]["row"], "attn · head 1");
  EXPECT_DOUBLE_EQ(cells[1]["entropy fraction"].get<double>(), 0.8);
  EXPECT_DOUBLE_EQ(cells[5]["entropy fraction"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(cells[5]["largest logit"].get<double>(), 400);
  EXPECT_DOUBLE_EQ(heat["layer"][1]["transform"][0]["filter"]["lt"].get<double>(), 0.1);
  const std::string subtitle = heat["title"]["subtitle"].dump();
  EXPECT_THAT(subtitle, HasSubstr("attn: ATTENTION_LOGIT_GROWTH since step 2 (head 1 of 2)"));
  EXPECT_THAT(subtitle, HasSubstr("attn: ATTENTION_ENTROPY_COLLAPSE since step 2 (head 1 of 2)"));
  const json logit = json::parse(chart(charts, "attention-logit").spec);
  const json top = logit["data"]["values"];
  ASSERT_EQ(top.size(), 6u);
  EXPECT_DOUBLE_EQ(top[0]["value"].get<double>(), 3);  // the larger of the two heads
  EXPECT_DOUBLE_EQ(top[5]["value"].get<double>(), 400);
  EXPECT_DOUBLE_EQ(logit["layer"][1]["data"]["values"][0]["threshold"].get<double>(), 100);
  const std::string page = render_html(in, charts, kLibs);
  EXPECT_THAT(page, HasSubstr("<section id=\"attention\">"));
  // Without attention records: no such charts, no section.
  const std::vector<Chart> plain = build_charts(f.input());
  EXPECT_THAT(render_html(f.input(), plain, kLibs), Not(HasSubstr("id=\"attention\"")));
}

TEST(HtmlCharts, TheLossChartMarksTheSpikeAndTheDivergenceFromTheReport) {
  Fixture f({"rnn"}, 4);
  std::vector<StepScalar> scalars;
  ReportBuilder b;
  for (int64_t step = 0; step < 60; ++step) {
    const double loss = step >= 50 ? 80.0 : step == 30 ? 9.0 : 3.0 - 0.01 * step + 0.01 * (step % 2);
    scalars.push_back({step, kLossSeries, loss});
    scalars.push_back({step, kGradNormSeries, 1.0 + 0.1 * (step % 3)});
    scalars.push_back({step, kClippedGradNormSeries, 1.0});
    b.add(Record{step, "rnn", Site::kParamGrad, with_l2(1)});
  }
  scalars.push_back({60, kLossSeries, std::nan("")});  // not a point: the divergence marks it
  for (const StepScalar& x : scalars) b.add(x);
  f.report = b.build();
  ASSERT_EQ(f.report.series.spike_count, 1);
  ASSERT_EQ(f.report.series.divergence_step, 50);
  HtmlReportInput in = f.input();
  in.scalars = &scalars;
  const std::vector<Chart> charts = build_charts(in);
  const json loss = json::parse(chart(charts, "loss").spec);
  const json points = loss["layer"][0]["data"]["values"];
  ASSERT_EQ(points.size(), 60u);
  EXPECT_DOUBLE_EQ(points[30]["value"].get<double>(), 9.0);
  EXPECT_EQ(loss["layer"][0]["encoding"]["y"]["scale"]["type"], "log");
  const json spike = loss["layer"][1]["data"]["values"];
  ASSERT_EQ(spike.size(), 1u);
  EXPECT_EQ(spike[0]["step"], 30);
  EXPECT_EQ(loss["layer"][2]["data"]["values"][0]["label"], "DIVERGENCE from step 50");
  EXPECT_THAT(loss["title"]["subtitle"].dump(), HasSubstr("DIVERGENCE at step 50"));
  const json norms = json::parse(chart(charts, "grad-norm").spec);
  EXPECT_EQ(norms["layer"][0]["data"]["values"].size(), 120u);  // before and after clipping
  EXPECT_DOUBLE_EQ(norms["layer"][1]["data"]["values"][0]["median"].get<double>(), f.report.series.grad_norm_median);
  const std::string page = render_html(in, charts, kLibs);
  EXPECT_THAT(page, HasSubstr("<section id=\"loss\">"));
  // Without scalars: no such charts, no section.
  const std::vector<Chart> plain = build_charts(f.input());
  EXPECT_THAT(render_html(f.input(), plain, kLibs), Not(HasSubstr("id=\"loss\"")));
}

// A loss past float32's range is LOSS_OUT_OF_RANGE, named in the subtitle, and no point: on the
// axis it would flatten every other loss (and, negative, lose the log scale).
TEST(HtmlCharts, ALossOutOfRangeIsNamedNotDrawn) {
  Fixture f({"rnn"}, 4);
  std::vector<StepScalar> scalars;
  ReportBuilder b;
  for (int64_t step = 0; step < 20; ++step) {
    scalars.push_back({step, kLossSeries, step == 7 ? -1e200 : 2.0 - 0.01 * step});
    b.add(Record{step, "rnn", Site::kParamGrad, with_l2(1)});
  }
  for (const StepScalar& x : scalars) b.add(x);
  f.report = b.build();
  ASSERT_EQ(f.report.series.out_of_range_losses, 1);
  HtmlReportInput in = f.input();
  in.scalars = &scalars;
  const json loss = json::parse(chart(build_charts(in), "loss").spec);
  const json points = loss["layer"][0]["data"]["values"];
  ASSERT_EQ(points.size(), 19u);
  for (const json& p : points) EXPECT_NE(p["step"], 7);
  EXPECT_EQ(loss["layer"][0]["encoding"]["y"]["scale"]["type"], "log");
  EXPECT_THAT(loss["title"]["subtitle"].dump(), HasSubstr("LOSS_OUT_OF_RANGE at step 7 (loss -1e+200)"));
}

TEST(HtmlCharts, ARunBesideIsDrawnAsLinesOfItsOwnWithItsVerdict) {
  Fixture f({"rnn"}, 4);
  f.meta.name = "blowup";
  std::vector<StepScalar> mine, theirs;
  for (int64_t step = 0; step < 10; ++step) {
    mine.push_back({step, kLossSeries, 4.0 + step});
    mine.push_back({step, kGradNormSeries, 10.0});
    theirs.push_back({step, kLossSeries, 4.0 - 0.1 * step});
    theirs.push_back({step, kGradNormSeries, 3.0});
    theirs.push_back({step, kClippedGradNormSeries, 0.25});
  }
  const BesideRun beside{"clipped <b>", &theirs, "healthy (3 nodes)"};
  HtmlReportInput in = f.input();
  in.scalars = &mine;
  in.beside = &beside;
  const std::vector<Chart> charts = build_charts(in);
  const json loss = json::parse(chart(charts, "loss").spec);
  const json points = loss["layer"][0]["data"]["values"];
  ASSERT_EQ(points.size(), 20u);  // both runs' losses, each labelled with its run
  EXPECT_EQ(points[0]["series"], "blowup");
  EXPECT_DOUBLE_EQ(points[9]["value"].get<double>(), 13.0);
  EXPECT_EQ(points[10]["series"], "clipped <b>");
  EXPECT_DOUBLE_EQ(points[19]["value"].get<double>(), 3.1);
  EXPECT_THAT(loss["title"]["subtitle"].dump(), HasSubstr("beside it, clipped <b>: healthy (3 nodes)"));
  const json norms = json::parse(chart(charts, "grad-norm").spec)["layer"][0]["data"]["values"];
  ASSERT_EQ(norms.size(), 30u);
  EXPECT_EQ(norms[0]["series"], "blowup: before clipping");
  EXPECT_EQ(norms[11]["series"], "clipped <b>: after clipping");
  const std::string page = render_html(in, charts, kLibs);
  EXPECT_THAT(page, HasSubstr("Drawn beside it: <b class=\"mono\">clipped &lt;b&gt;</b>, healthy (3 nodes)"));
  // One name for both: the one beside is told apart.
  const BesideRun same{"blowup", &theirs, "healthy"};
  in.beside = &same;
  const json twins = json::parse(chart(build_charts(in), "loss").spec)["layer"][0]["data"]["values"];
  EXPECT_EQ(twins[10]["series"], "blowup (beside)");
  // A run without a loss of its own still gets the section for the one beside it.
  in.scalars = nullptr;
  const std::vector<Chart> only = build_charts(in);
  EXPECT_EQ(json::parse(chart(only, "loss").spec)["layer"][0]["data"]["values"].size(), 10u);
  EXPECT_THAT(render_html(in, only, kLibs), HasSubstr("<section id=\"loss\">"));
}

TEST(HtmlCharts, EmbeddingTablesGetFourChartsEach) {
  const Fixture f({"fc1"});
  EmbeddingRunSummary e;
  EmbeddingTableSummary t;
  t.report.layer = "item " + kHostile;
  t.profile.layer = t.report.layer;
  t.profile.lorenz = {{0, 0}, {0.5, 0.2}, {1, 1}};
  t.profile.popularity_gini = 0.3;
  t.profile.exposure = {{1, 10, 100}, {7, 3}, 0};
  t.profile.velocity = {{1e-3, 1e-2, 1e-1}, {4, 6}, 2};
  t.profile.oscillation = {{-1, 0, 1}, {5, 5}, 0};
  e.tables = {t, t};
  HtmlReportInput in = f.input();
  in.embedding = &e;
  const std::vector<Chart> charts = build_charts(in);
  ASSERT_EQ(charts.size(), 6u + 8u);
  const json lorenz = json::parse(chart(charts, "embedding-1-lorenz").spec);
  EXPECT_EQ(lorenz["layer"][1]["data"]["values"].size(), 3u);
  EXPECT_THAT(lorenz["title"]["subtitle"].get<std::string>(), HasSubstr("Gini 0.300"));
  const json velocity = json::parse(chart(charts, "embedding-0-velocity").spec);
  EXPECT_EQ(velocity["data"]["values"][1]["rows"], 6);
  EXPECT_THAT(velocity["title"]["subtitle"].get<std::string>(), HasSubstr("2 rows with velocity 0"));
  EXPECT_EQ(json::parse(chart(charts, "embedding-0-oscillation").spec)["layer"][1]["data"]["values"][0]["threshold"],
            -0.3);
}

// Histograms come from files: a chart draws only the bins its edges bound, and leaves out a
// histogram with none (bins without edges once crashed `gradscope html`).
TEST(HtmlCharts, HistogramBinsWithoutEdgesAreNotDrawn) {
  const Fixture f({"fc1"});
  EmbeddingRunSummary e;
  EmbeddingTableSummary t;
  t.report.layer = t.profile.layer = "item";
  t.profile.exposure = {{}, {3, 1}, 0, 0};                // bins, no edges
  t.profile.velocity = {{1e-3, 1e-2}, {4, 6}, 0, 0};      // one edge short: the first bin only
  t.profile.oscillation = {{-1, 0, 1, 2}, {5}, 0, 0};     // more edges than bins
  EmbeddingTableSummary empty;
  empty.report.layer = empty.profile.layer = "user";      // edges [] and counts []
  e.tables = {t, empty};
  HtmlReportInput in = f.input();
  in.embedding = &e;
  std::vector<Chart> charts;
  ASSERT_NO_THROW(charts = build_charts(in));
  std::vector<std::string> names;
  for (const Chart& c : charts)
    if (c.name.rfind("embedding-", 0) == 0) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"embedding-0-lorenz", "embedding-0-velocity", "embedding-0-oscillation",
                                             "embedding-1-lorenz"}));
  EXPECT_EQ(json::parse(chart(charts, "embedding-0-velocity").spec)["data"]["values"],
            json::parse(R"([{"lo": 0.001, "hi": 0.01, "rows": 4}])"));
  EXPECT_EQ(json::parse(chart(charts, "embedding-0-oscillation").spec)["data"]["values"],
            json::parse(R"([{"lo": -1, "hi": 0, "rows": 5}])"));
  EXPECT_NO_THROW(render_html(in, charts, kLibs));
}

TEST(HtmlCharts, ChartsWithNothingToDrawAreLeftOutAndThePageSaysWhy) {
  const Fixture f({"dead"});  // only zero gradients: nothing for a log axis
  std::vector<std::string> names;
  for (const Chart& c : build_charts(f.input())) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"gradient-flow", "node-diagram", "activations", "update-ratio"}));
  const std::string page = render_html(f.input(), kLibs);
  EXPECT_THAT(page, HasSubstr("<p class=\"note\">No finite, non-zero gradient recorded"));
  EXPECT_THAT(page, Not(HasSubstr("data-chart=\"gradient-norm\"")));
}

TEST(HtmlCharts, GradientNormMarksTheStepWhereNonFiniteValuesBegan) {
  Fixture f({"fc1"}, 3);
  f.report.nonfinite_origin.step = 2;
  f.report.nonfinite_origin.node = "fc1";
  const json spec = json::parse(chart(build_charts(f.input()), "gradient-norm").spec);
  ASSERT_EQ(spec["layer"].size(), 2u);
  EXPECT_EQ(spec["layer"][1]["data"]["values"][0]["step"], 2);
  EXPECT_FALSE(spec["layer"][0].contains("data"));  // the lines keep the top-level data
  EXPECT_EQ(spec["data"]["values"].size(), 3u);
}

TEST(HtmlPage, HostileNamesAreEscapedEverywhere) {
  const Fixture f({"fc1", kHostile});
  const std::string page = render_html(f.input(), kLibs);
  EXPECT_THAT(page, Not(HasSubstr("<img")));
  EXPECT_THAT(page, HasSubstr("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));  // table, title
  // Exactly the chart bundle, the chart data and the driver: nothing from the run opens a tag.
  std::size_t scripts = 0;
  for (std::size_t at = page.find("<script"); at != std::string::npos; at = page.find("<script", at + 1)) ++scripts;
  EXPECT_EQ(scripts, 3u);
  std::size_t closes = 0;
  for (std::size_t at = page.find("</script"); at != std::string::npos; at = page.find("</script", at + 1)) ++closes;
  EXPECT_EQ(closes, 3u);
}

TEST(HtmlPage, OnlyNoncedScriptsMayRunAndNothingIsFetched) {
  const Fixture f({"fc1", "dead"});
  const std::string page = render_html(f.input(), kLibs);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(page, m, std::regex("script-src 'nonce-([0-9a-f]{32})' 'unsafe-eval'")));
  const std::string nonce = m[1];
  EXPECT_THAT(page, HasSubstr("default-src 'none'"));
  const std::regex tag("<script([^>]*)>");
  for (auto it = std::sregex_iterator(page.begin(), page.end(), tag); it != std::sregex_iterator(); ++it) {
    const std::string attrs = (*it)[1];
    if (attrs.find("application/json") == std::string::npos) {
      EXPECT_EQ(attrs, " nonce=\"" + nonce + "\"");
    }
  }
  EXPECT_THAT(page, Not(HasSubstr("http://")));
  EXPECT_THAT(page, Not(HasSubstr("src=\"")));
  // A second page gets a different nonce.
  const std::string second = render_html(f.input(), kLibs);
  ASSERT_TRUE(std::regex_search(second, m, std::regex("nonce-([0-9a-f]{32})")));
  EXPECT_NE(m[1], nonce);
}

TEST(HtmlPage, ShowsVerdictAdviceTableAndOneContainerPerChart) {
  const Fixture f({"fc1", "dead"});
  const std::string page = render_html(f.input(), kLibs);
  EXPECT_THAT(page, HasSubstr("<p class=\"verdict bad\">verdict: unhealthy"));
  EXPECT_THAT(page, HasSubstr(flag_advice(Flag::kVanishing)));
  EXPECT_THAT(page, HasSubstr("<table id=\"nodes\">"));
  EXPECT_THAT(page, HasSubstr("test 1.0"));
  for (const Chart& c : build_charts(f.input()))
    EXPECT_THAT(page, HasSubstr("data-chart=\"" + c.name + "\"")) << c.name;
  // The chart data parses back from the page.
  const std::size_t at = page.find("id=\"gradscope-charts\">") + 22;
  const json specs = json::parse(page.substr(at, page.find("</script>", at) - at));
  EXPECT_EQ(specs.size(), 6u);
  EXPECT_EQ(specs["gradient-flow"]["data"]["values"].size(), 8u);
}

TEST(HtmlPage, EmbeddingFindingsReachTheVerdictAndWhatToDo) {
  const Fixture f({"fc1"});
  EmbeddingRunSummary e;
  EmbeddingTableSummary t;
  t.report.layer = t.profile.layer = "item";
  EmbeddingDiagnostic d;
  d.type = "ZOMBIE_ROWS";
  d.premise = "108 of 6170 exposed rows oscillate";
  d.implies = "these rows thrash";
  d.action = "LOWER_EMBEDDING_LR_OR_ENABLE_AUTO_FIX";
  t.report.diagnostics = {d};
  e.tables = {t};
  HtmlReportInput in = f.input();
  in.embedding = &e;
  const std::string page = render_html(in, kLibs);
  // One verdict: the run is unhealthy, though no node is (it said "healthy" under a red badge).
  EXPECT_THAT(page, HasSubstr("<p class=\"verdict bad\">verdict: unhealthy: embedding: item [ZOMBIE_ROWS]; nodes healthy "
                              "(1 node, 4 steps)</p>"));
  EXPECT_THAT(page, HasSubstr("No node is flagged by the gradient rules; the embedding tables have findings."));
  // An older embedding.json without advice: its action code stands in for it.
  EXPECT_THAT(page, HasSubstr("these rows thrash What to do: LOWER_EMBEDDING_LR_OR_ENABLE_AUTO_FIX"));
  d.advice = "Lower this table's learning rate.";
  t.report.diagnostics = {d};
  e.tables = {t};
  EXPECT_THAT(render_html(in, kLibs), HasSubstr("these rows thrash What to do: Lower this table&#39;s learning rate."));
  EXPECT_THAT(page, HasSubstr("108 of 6170 exposed rows oscillate"));
}

TEST(HtmlPage, HealthyRunSaysSoAndHasNothingToDo) {
  const Fixture f({"fc1"});
  const std::string page = render_html(f.input(), kLibs);
  EXPECT_THAT(page, HasSubstr("<p class=\"verdict ok\">verdict: healthy"));
  EXPECT_THAT(page, HasSubstr("No node is flagged"));
}

TEST(HtmlPage, MissingInputsAndLibrariesAreErrors) {
  const Fixture f({"fc1"});
  HtmlReportInput in = f.input();
  in.series = nullptr;
  EXPECT_THROW(build_charts(in), Error);
  EXPECT_THROW(render_html(f.input(), ChartLibraries{"", "x"}), Error);
}

TEST(HtmlPage, InvalidUtf8InANodeNameDoesNotThrow) {
  const Fixture f({"fc1", std::string("bad\xFF\xFEname")});
  std::string page;
  ASSERT_NO_THROW(page = render_html(f.input(), kLibs));
  EXPECT_THAT(page, HasSubstr("bad\\ufffd\\ufffdname"));  // in the chart data, replaced
}

}  // namespace
}  // namespace gradscope

namespace gradscope {
namespace {

TEST(HtmlCompression, TheMeasuredPointsAreShownAsGivenAndEscaped) {
  const Fixture f({"fc1"}, 2);
  HtmlReportInput in = f.input();
  EXPECT_EQ(render_html(in, kLibs).find("id=\"compression\""), std::string::npos);  // none saved: no section
  const compress::MeasuredComparison c{"mlp <b>x</b>", 0.95, 1000,
                                       {{"dynamics", "quarter", 240, 0.93}, {"uniform-int4", "int4", 140, NAN}}};
  in.compression = &c;
  const std::vector<Chart> charts = build_charts(in);
  const json spec = json::parse(chart(charts, "compression").spec);
  const json points = spec["layer"][0]["data"]["values"];
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0]["bytes"], 240);
  EXPECT_DOUBLE_EQ(points[0]["accuracy"].get<double>(), 0.93);
  EXPECT_TRUE(points[1]["accuracy"].is_null());
  // A line per method through the same points, then the points, then the FP32 rule.
  EXPECT_EQ(spec["layer"][0]["mark"]["type"], "line");
  EXPECT_EQ(spec["layer"][0]["encoding"]["color"]["field"], "method");
  EXPECT_EQ(spec["layer"][1]["data"]["values"], points);
  EXPECT_EQ(spec["layer"][1]["mark"]["type"], "point");
  EXPECT_DOUBLE_EQ(spec["layer"][2]["data"]["values"][0]["accuracy"].get<double>(), 0.95);
  const std::string page = render_html(in, kLibs);
  EXPECT_NE(page.find("<p>mlp &lt;b&gt;x&lt;/b&gt;: each variant"), std::string::npos);
  EXPECT_NE(page.find("<td class=\"mono\">240</td><td class=\"mono\">24.0%</td><td class=\"mono\">0.930</td>"),
            std::string::npos);
  EXPECT_NE(page.find("<td class=\"mono\">140</td><td class=\"mono\">14.0%</td><td class=\"mono\">-</td>"),
            std::string::npos);
  EXPECT_NE(page.find("data-chart=\"compression\""), std::string::npos);
}

}  // namespace
}  // namespace gradscope
