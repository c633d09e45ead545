// A tree run rendered: the terminal text and the HTML page show the measured numbers, and a
// feature name from a hostile model file reaches neither as markup nor as terminal control.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "../core/tree_builders.h"
#include "gradscope/core/audit/rules.h"
#include "gradscope/core/findings/kinds.h"
#include "gradscope/core/vocabulary/numbers.h"
#include "gradscope/io/html/report.h"
#include "gradscope/io/render/run_report.h"
#include "gradscope/io/render/table.h"
#include "gradscope/io/trees/text.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const char* kHostile = "</script><img src=x onerror=alert(1)>\x1b[2J";

// 12 rounds on f0 (gain 10 each) and one split on f1: CONCENTRATED on f0, named hostilely.
TreeRunSummary concentrated() {
  std::vector<Tree> trees;
  for (int32_t r = 0; r < 12; ++r)
    trees.push_back(test::stump(r, r == 5 ? 1 : 0, 0, -0.5 / (r + 1), 0.5 / (r + 1), 10));
  TreeEnsemble m = test::ensemble(trees, 2, 1, TreeLink::kSigmoid, "binary:logistic");
  m.feature_names = {kHostile, "age"};
  std::mt19937_64 gen(2);
  const TreeData d =
      test::random_data(gen, 50, 2, [](const double* x) { return x[0] > 0 ? 1.0 : 0.0; });
  return {"m.json", "d.csv", "", "y", analyze_tree_dynamics(m, {&d})};
}

TEST(TreeRender, TextShowsTheTimelineFindingAndEscapedNames) {
  const TreeRunSummary s = concentrated();
  ASSERT_EQ(s.report.findings.size(), 1u);
  const std::string text = render_tree_timeline(s) + render_tree_findings(s);
  EXPECT_THAT(text, HasSubstr("12 rounds x 1 tree, 1 output, 2 features"));
  EXPECT_THAT(text, HasSubstr("rounds in windows of 5"));
  EXPECT_THAT(text, HasSubstr("0-3 "));  // 12 rounds in 3 windows of 4
  EXPECT_THAT(
      text,
      HasSubstr("findings: 1\n  CONCENTRATED on '</script><img src=x onerror=alert(1)>\\x1b[2J'"));
  EXPECT_THAT(text, Not(HasSubstr("\x1b")));
  EXPECT_THAT(text, HasSubstr("(threshold 0.9)"));
  EXPECT_EQ(tree_verdict(&s),
            "; trees: CONCENTRATED on '</script><img src=x onerror=alert(1)>\\x1b[2J'");
  EXPECT_EQ(tree_verdict(nullptr), "");
}

TEST(TreeRender, TheRunVerdictAndJsonCountTheTrees) {
  const TreeRunSummary s = concentrated();
  const Report healthy_nodes = build_report({});
  FlowSummary flow;
  EXPECT_TRUE(run_unhealthy(healthy_nodes, flow, nullptr, &s));
  EXPECT_FALSE(run_unhealthy(healthy_nodes, flow, nullptr, nullptr));
  EXPECT_THAT(render_run_verdict(healthy_nodes, flow, nullptr, &s),
              HasSubstr("verdict: unhealthy: trees: CONCENTRATED"));
  TreeRunSummary quiet = s;
  quiet.report.findings.clear();
  EXPECT_THAT(render_run_verdict(healthy_nodes, flow, nullptr, &quiet),
              HasSubstr("; trees: no findings"));
  const nlohmann::json doc =
      nlohmann::json::parse(render_run_json(RunMetadata{}, healthy_nodes, flow, nullptr, &s));
  EXPECT_EQ(doc.at("run").at("unhealthy"), true);
  EXPECT_EQ(doc.at("gradscope_report").at("healthy"), false);  // the nodes are healthy, the run is not
  EXPECT_EQ(doc.at("trees").at("findings")[0].at("flag"), "CONCENTRATED");
  EXPECT_EQ(doc.at("trees").at("model").at("feature_names")[0], kHostile);  // JSON keeps the value
}

// The page's input for a tree run alone: no module nodes, no frames, no series.
struct TreePage {
  RunMetadata meta;
  Report report = build_report({});
  Timeline timeline;
  FlowSummary flow;
  std::vector<NodeSeries> series;
  HtmlReportInput input(const TreeRunSummary& s) const {
    HtmlReportInput in;
    in.meta = &meta;
    in.report = &report;
    in.timeline = &timeline;
    in.flow = &flow;
    in.series = &series;
    in.trees = &s;
    return in;
  }
};

TEST(TreeRender, ThePageDrawsTheRoundsAndEscapesNames) {
  const TreeRunSummary s = concentrated();
  const TreePage page_of;
  HtmlReportInput in = page_of.input(s);
  const std::vector<Chart> charts = build_charts(in);
  std::vector<std::string> names;
  for (const Chart& c : charts) names.push_back(c.name);
  EXPECT_THAT(names, ::testing::ElementsAre("tree-contribution", "tree-loss", "tree-concentration",
                                            "tree-features"));
  const nlohmann::json contribution = nlohmann::json::parse(charts[0].spec);
  const auto& values = contribution.at("layer")[0].at("data").at("values");
  EXPECT_EQ(values[0].at("round"), 0);
  EXPECT_EQ(values[0].at("measure"), "mean |round output|");
  EXPECT_DOUBLE_EQ(values[0].at("value").get<double>(), s.report.per_round[0].contribution);
  const std::string page = render_html(in, charts, {"bundle", "versions"});
  EXPECT_THAT(page, HasSubstr("<section id=\"trees\">"));
  EXPECT_THAT(page,
              HasSubstr("CONCENTRATED on &#39;&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;"));
  EXPECT_THAT(page, Not(HasSubstr("<img src=x")));
  EXPECT_THAT(page, Not(HasSubstr("id=\"flow\"")));
  EXPECT_THAT(page, HasSubstr("<dt>boosting rounds</dt><dd class=\"mono\">12</dd>"));

  // The same model without rows: leaf values still draw; the loss curve's place says why not.
  TreeRunSummary model_only = s;
  model_only.report = analyze_tree_dynamics(
      test::ensemble({test::stump(0, 0, 0, -1, 1, 2), test::stump(1, 1, 0, -0.5, 0.5, 1)}, 2));
  in.trees = &model_only;
  const std::vector<Chart> fewer = build_charts(in);
  ASSERT_FALSE(fewer.empty());
  EXPECT_EQ(fewer[0].name, "tree-contribution");
  EXPECT_THAT(fewer[0].spec, HasSubstr("mean |leaf value|"));
  EXPECT_THAT(fewer[0].spec, Not(HasSubstr("mean |round output|")));
  EXPECT_THAT(render_html(in, fewer, {"bundle", "versions"}),
              HasSubstr("No loss curve: the run has no labelled rows or no metric."));
}

// A large validation rise on 4 rows, one of them wrong: OVERFITTING below the strict z, with
// the confidence its permutation test computed (at most 15/16 for 4 rows): tentative.
TreeRunSummary tentative_overfit() {
  std::vector<Tree> trees;
  for (int32_t r = 0; r < 40; ++r) trees.push_back(test::stump(r, 0, 0.5, -0.1, 0.1));
  const TreeEnsemble m = test::ensemble(trees, 1, 1, TreeLink::kSigmoid, "binary:logistic");
  TreeData train, valid;
  train.cols = valid.cols = 1;
  for (int i = 0; i < 200; ++i) {
    train.x.push_back(i % 2);
    train.y.push_back(i % 2);
  }
  valid.x = {0, 0, 1, 1};
  valid.y = {0, 0, 0, 1};
  train.rows = 200;
  valid.rows = 4;
  return {"m.json", "t.csv", "v.csv", "y", analyze_tree_dynamics(m, {&train, &valid})};
}

TEST(TreeRender, ATentativeFindingShowsItsConfidenceAndDoesNotMakeTheRunUnhealthy) {
  const TreeRunSummary s = tentative_overfit();
  ASSERT_EQ(s.report.findings.size(), 1u);
  const TreeFinding& f = s.report.findings[0];
  ASSERT_TRUE(f.tentative());
  const std::string text = render_tree_findings(s);
  EXPECT_THAT(text, HasSubstr("findings: 1 (1 tentative: not counted against the run)"));
  EXPECT_THAT(text, HasSubstr("OVERFITTING from round 11 (confidence " +
                              shown_number(f.confidence) + ", tentative): possibly"));
  EXPECT_EQ(tree_verdict(&s), "");
  // The verdict under "findings: 1 (1 tentative ...)" names it, never "no tree finding".
  EXPECT_EQ(tree_run_verdict(s), "verdict: healthy: 1 tentative tree finding, not counted against the run");
  const Report healthy_nodes = build_report({});
  FlowSummary flow;
  EXPECT_FALSE(run_unhealthy(healthy_nodes, flow, nullptr, &s));
  EXPECT_EQ(render_run_verdict(healthy_nodes, flow, nullptr, &s),
            render_verdict(healthy_nodes) + "; trees: 1 tentative finding, not counted");
  const nlohmann::json doc =
      nlohmann::json::parse(render_run_json(RunMetadata{}, healthy_nodes, flow, nullptr, &s));
  EXPECT_EQ(doc.at("run").at("unhealthy"), false);
  EXPECT_EQ(doc.at("gradscope_report").at("healthy"), true);
  const nlohmann::json& agent = doc.at("findings")[0];
  EXPECT_EQ(agent.at("type"), "OVERFITTING");
  EXPECT_EQ(agent.at("confidence"), "low");
  EXPECT_THAT(agent.at("premise").get<std::string>(),
              HasSubstr("confidence " + shown_number(f.confidence) +
                        " (tentative: not counted against the run)"));
  EXPECT_DOUBLE_EQ(doc.at("trees").at("findings")[0].at("confidence").get<double>(), f.confidence);

  const TreePage page_of;
  const HtmlReportInput in = page_of.input(s);
  EXPECT_THAT(render_html(in, build_charts(in), {"bundle", "versions"}),
              HasSubstr("(tentative: not counted against the run)"));
}

// One answer to "is this run healthy" in every JSON: gradscope_report.healthy is the run's
// verdict, whichever kind of finding makes it unhealthy, and a tentative finding alone does not.
TEST(RunVerdict, TheJsonsHealthyIsTheRunsVerdictForEveryFindingKind) {
  struct Case {
    std::string name;
    Report report;
    FlowSummary flow;
    std::optional<EmbeddingRunSummary> embedding;
    std::optional<TreeRunSummary> trees;
    bool healthy;
  };
  Stats nan;
  nan.count = nan.nan = 4;
  const Report healthy_nodes = build_report({});
  Report loss_scale = healthy_nodes;
  loss_scale.loss_scale.steps = 10;  // 5 skipped at the end: a warning (judge_loss_scale)
  loss_scale.loss_scale.skipped = loss_scale.loss_scale.trailing_skipped = 5;
  loss_scale.loss_scale.first_skipped = 5;
  loss_scale.loss_scale.last_skipped = 9;
  loss_scale.loss_scale.verdict = LossScaleReport::Verdict::kWarning;
  FlowSummary bad_flow;
  bad_flow.health = FlowHealth::kProblemsDetected;
  EmbeddingRunSummary zombie;
  zombie.tables.emplace_back();
  zombie.tables[0].report.layer = "item";
  zombie.tables[0].report.diagnostics.emplace_back();
  zombie.tables[0].report.diagnostics[0].type = kZombieRows;
  const std::vector<Case> cases = {
      {"no finding", healthy_nodes, {}, std::nullopt, std::nullopt, true},
      {"module", build_report({{0, "fc", Site::kParamGrad, nan}}), {}, std::nullopt, std::nullopt, false},
      {"flow", healthy_nodes, bad_flow, std::nullopt, std::nullopt, false},
      {"loss_scale", loss_scale, {}, std::nullopt, std::nullopt, false},
      {"embedding", healthy_nodes, {}, zombie, std::nullopt, false},
      {"trees", healthy_nodes, {}, std::nullopt, concentrated(), false},
      {"tentative trees", healthy_nodes, {}, std::nullopt, tentative_overfit(), true}};
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const EmbeddingRunSummary* embedding = c.embedding ? &*c.embedding : nullptr;
    const TreeRunSummary* trees = c.trees ? &*c.trees : nullptr;
    const nlohmann::json doc =
        nlohmann::json::parse(render_run_json(RunMetadata{}, c.report, c.flow, embedding, trees));
    EXPECT_EQ(doc.at("gradscope_report").at("healthy"), c.healthy);
    EXPECT_EQ(doc.at("run").at("unhealthy"), !c.healthy);
    const std::string verdict = render_run_verdict(c.report, c.flow, embedding, trees);
    EXPECT_EQ(verdict.rfind(c.healthy ? "verdict: healthy" : "verdict: unhealthy", 0), 0u) << verdict;
    // The finding behind the verdict is listed under its kind (the case's name).
    std::set<std::string> kinds;
    for (const nlohmann::json& f : doc.at("findings")) kinds.insert(f.at("kind").get<std::string>());
    if (c.name == "no finding") {
      EXPECT_TRUE(kinds.empty());
    } else if (c.name == "tentative trees") {
      EXPECT_EQ(kinds, std::set<std::string>{"trees"});
    } else {
      EXPECT_EQ(kinds.count(c.name), 1u);
    }
  }
}

}  // namespace
}  // namespace gradscope
