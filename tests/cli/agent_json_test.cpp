// The agent JSON as a user gets it: `gradscope report --json` on saved runs with each
// pathology, `diff --json`, `ls --json` and `ls --check`, hostile names and NaN values, and the
// HTML report showing the same findings (docs/agent-json.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <regex>

#include "../common/stats_fixture.h"
#include "gradscope/core/findings/kinds.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/html/report.h"
#include "gradscope/io/store/run_writer.h"
#include "run_cli.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using test::fresh_dir;
using test::run_cli;
using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kSteps = 20;

Stats grad(double l2) { return test::with_l2(l2, 10); }

// One head over 16 queries: its largest logit and mean entropy fraction.
HeadStats attention_head(double max_logit, double fraction) {
  HeadStats h;
  h.queries = h.fraction_queries = 16;
  h.max_logit = max_logit;
  h.entropy_fraction_sum = 16 * fraction;
  return h;
}

// A run of kSteps steps: "head" healthy at every step, plus what `sick` adds per step.
fs::path make_run(const fs::path& dir, const std::function<void(RunWriter&, int)>& sick) {
  RunWriter w(dir.string());
  for (int s = 0; s < kSteps; ++s) {
    w.add(Record{s, "head", Site::kParamGrad, grad(0.5)});
    w.add(Record{s, "head", Site::kActivation, test::with_l2(1, 10, 1, 0)});
    if (sick) sick(w, s);
  }
  w.close();
  return dir;
}

// The pathologies, each on node "body" of its own run.
const std::map<std::string, std::function<void(RunWriter&, int)>>& pathologies() {
  static const std::map<std::string, std::function<void(RunWriter&, int)>> p = {
      {"VANISHING",
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kParamGrad, grad(3e-9)});
       }},
      {"EXPLODING",
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kParamGrad, grad(2.5e5)});
       }},
      {"NAN",
       [](RunWriter& w, int s) {
         Stats g = grad(1);
         if (s >= 5) g.nan = 3, g.count += 3;
         w.add(Record{s, "body", Site::kParamGrad, g});
       }},
      {"INF",
       [](RunWriter& w, int s) {
         Stats g = grad(1);
         if (s >= 7) g.pos_inf = 2, g.count += 2;
         w.add(Record{s, "body", Site::kParamGrad, g});
       }},
      {"DEAD",
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kParamGrad, grad(1)});
         w.add(Record{s, "body", Site::kActivation, test::with_l2(1, 10, 10, 0)});
       }},
      {"SATURATED",
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kParamGrad, grad(1)});
         w.add(Record{s, "body", Site::kPreActivation, test::with_l2(1, 10, 0, 7)});
       }},
      {"STAGNANT",
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kParamGrad, grad(1)});
         w.add(Record{s, "body", Site::kParam, grad(1)});
         w.add(Record{s, "body", Site::kUpdate, grad(4e-9)});
       }},
      {"DEAD_CHANNELS",
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kParamGrad, grad(1)});
         w.add(Record{s, "body", Site::kActivation, test::with_l2(1, 10, 5, 0)});
         ChannelRecord c;
         c.step = s;
         c.node = "body";
         for (int k = 0; k < 10; ++k)
           c.activation.push_back(test::with_l2(1, 10, k < 6 ? 10 : 0, 0));
         w.add(c);
       }},
      {"IGNORED_CHANNELS",
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kParamGrad, grad(1)});
         w.add(Record{s, "body", Site::kActivation, test::with_l2(1, 10, 1, 0)});
         ChannelRecord c;
         c.step = s;
         c.node = "body";
         for (int k = 0; k < 10; ++k) {
           c.activation.push_back(test::with_l2(1, 10, 0, 0));              // every channel live
           c.output_grad.push_back(test::with_l2(k < 4 ? 1e-9 : 0.5, 10));  // 4 ignored
         }
         w.add(c);
       }},
      {"NO_DATA",  // parameters recorded, but no activation and no gradient: nothing to judge
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kParam, grad(1)});
       }},
      {"LEAKAGE",
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kParamGrad, grad(1)});
         w.add(Record{s, "body", Site::kActivation, test::with_l2(1, 10, 1, 0)});
         w.add(SimilarityRecord{s, "body", "head", 0.97});
       }},
      {"ATTENTION_LOGIT_GROWTH",  // head 1's largest logit from 4 to 250 x step from step 5
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kParamGrad, grad(1)});
         w.add(Record{s, "body", Site::kActivation, test::with_l2(1, 10, 1, 0)});
         w.add(AttentionRecord{s, "body", {attention_head(3, 0.8), attention_head(s < 5 ? 4 : 250.0 * s, 0.8)}});
       }},
      {"ATTENTION_ENTROPY_COLLAPSE",  // head 0 onto one key from step 6, its logits small
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kParamGrad, grad(1)});
         w.add(Record{s, "body", Site::kActivation, test::with_l2(1, 10, 1, 0)});
         w.add(AttentionRecord{s, "body", {attention_head(5, s < 6 ? 0.9 : 0.01), attention_head(3, 0.8)}});
       }},
      {"FROZEN",
       [](RunWriter& w, int s) {
         w.add(Record{s, "body", Site::kActivation, test::with_l2(1, 10, 1, 0)});
         w.add(Record{s, "body", Site::kFrozenParam, grad(1)});
       }},
  };
  return p;
}

Json report_json(const fs::path& run, int expect_code) {
  const test::Result r = run_cli("report --json " + run.string());
  EXPECT_EQ(r.code, expect_code) << r.err;
  return Json::parse(r.out);
}

// Every number written in `premise` once the rule's own texts (its measure name, the detail
// naming channels or nodes) are taken out.
std::vector<double> numbers_in(std::string premise, const std::vector<std::string>& texts) {
  for (const std::string& t : texts)
    for (std::size_t at; !t.empty() && (at = premise.find(t)) != std::string::npos;)
      premise.erase(at, t.size());
  std::vector<double> out;
  const std::regex number(R"((-?\d+(\.\d+)?(e[-+]?\d+)?))");
  for (auto it = std::sregex_iterator(premise.begin(), premise.end(), number);
       it != std::sregex_iterator(); ++it)
    out.push_back(std::stod((*it)[1]));
  return out;
}

const Json* find(const Json& findings, const std::string& type, const std::string& node) {
  for (const Json& f : findings)
    if (f.at("type") == type && f.at("node") == node) return &f;
  return nullptr;
}

class AgentJson : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new fs::path(fresh_dir("agent-json"));
    make_run(*dir_ / "healthy", nullptr);
    for (const auto& [type, sick] : pathologies()) make_run(*dir_ / type, sick);
  }
  static void TearDownTestSuite() {
    fs::remove_all(*dir_);
    delete dir_;
  }
  static fs::path* dir_;
};
fs::path* AgentJson::dir_ = nullptr;

TEST_F(AgentJson, HealthyRunHasNoFindings) {
  const Json doc = report_json(*dir_ / "healthy", 0);
  EXPECT_EQ(doc.at("findings_version"), 1);
  EXPECT_EQ(doc.at("findings"), Json::array());
  // The keys other programs read are still there.
  for (const char* key : {"run", "gradscope_report", "gradient_flow"})
    EXPECT_TRUE(doc.contains(key)) << key;
}

TEST_F(AgentJson, EachPathologyGivesItsFindingWithTheReportsNumbers) {
  for (const auto& [type, sick] : pathologies()) {
    SCOPED_TRACE(type);
    const Json doc = report_json(*dir_ / type, 1);
    const Json* f = find(doc.at("findings"), type, "body");
    ASSERT_NE(f, nullptr) << doc.at("findings").dump(1);
    for (const char* key : {"kind", "type", "node", "since_step", "premise", "implies", "action",
                            "expected_effect", "confidence", "evidence"})
      EXPECT_TRUE(f->contains(key)) << key;
    EXPECT_EQ(f->at("kind"), "module");
    EXPECT_THAT(std::string(f->at("confidence")), ::testing::AnyOf("high", "medium", "low"));
    EXPECT_FALSE(f->at("action").get<std::string>().empty());
    // The report's evidence for this flag: the finding holds the same value, step and threshold.
    const Json* node = nullptr;
    for (const Json& n : doc.at("gradscope_report").at("nodes"))
      if (n.at("node") == "body") node = &n;
    ASSERT_NE(node, nullptr);
    const Json* ev = nullptr;
    for (const Json& e : node->at("evidence"))
      if (e.at("flag") == type) ev = &e;
    ASSERT_NE(ev, nullptr);
    EXPECT_EQ(f->at("since_step"), ev->at("first_step"));
    const Json& measured = f->at("evidence").at(0);
    if (type == "DEAD_CHANNELS") {
      EXPECT_EQ(measured.at("value"), ev->at("value"));
    } else {
      EXPECT_EQ(measured.at("name"), ev->at("measure"));
      EXPECT_EQ(measured.at("value"), ev->at("value"));
    }
    // Every number in the premise is one of the report's values for this node.
    std::vector<double> held = {
        ev->at("value").get<double>(), node->at("steps").get<double>(),
        node->at("channels").get<double>(), node->at("nonfinite_steps").get<double>(),
        doc.at("gradscope_report").at("thresholds").at("channel_frac").get<double>()};
    if (!ev->at("threshold").is_null()) held.push_back(ev->at("threshold").get<double>());
    if (!ev->at("first_step").is_null()) held.push_back(ev->at("first_step").get<double>());
    // Shown with four significant digits; the margin "(1.58x the threshold)" is value / threshold.
    std::string premise = f->at("premise");
    const auto margin = premise.find("x the threshold)");
    if (margin != std::string::npos) {
      const auto open = premise.rfind(" (", margin);
      const double ratio = std::stod(premise.substr(open + 2, margin - open - 2));
      const double expect = ev->at("value").get<double>() / ev->at("threshold").get<double>();
      EXPECT_NEAR(ratio, expect, 5e-3 * std::fabs(expect)) << premise;
      premise.erase(open, margin + 16 - open);
    }
    const std::vector<std::string> texts = {ev->at("measure"), ev->at("detail"), " (at the threshold)"};
    const auto shown = [&](double v, double h) { return v == h || std::fabs(v - h) <= 5e-4 * std::fabs(h); };
    for (double v : numbers_in(premise, texts))
      EXPECT_TRUE(std::any_of(held.begin(), held.end(), [&](double h) { return shown(v, h); }))
          << v << " in: " << premise;
    const std::vector<double> written = numbers_in(premise, texts);
    EXPECT_TRUE(std::any_of(written.begin(), written.end(),
                            [&](double v) { return shown(v, ev->at("value").get<double>()); }))
        << premise;
  }
}

TEST_F(AgentJson, FlowFindingAgreesWithTheGradientFlowSection) {
  const Json doc = report_json(*dir_ / "VANISHING", 1);
  const Json* f = find(doc.at("findings"), "GRADIENT_FLOW", "");
  if (!f)
    for (const Json& g : doc.at("findings"))
      if (g.at("type") == "GRADIENT_FLOW") f = &g;
  ASSERT_NE(f, nullptr);
  EXPECT_TRUE(f->at("node").is_null());
  const Json& flow = doc.at("gradient_flow");
  EXPECT_EQ(f->at("evidence").at(0).at("name"), "issue_ratio");
  EXPECT_EQ(f->at("evidence").at(0).at("value"), flow.at("issue_ratio"));
  EXPECT_THAT(f->at("premise").get<std::string>(),
              HasSubstr("gradient flow " + flow.at("health").get<std::string>() + ": " +
                        std::to_string(flow.at("issue_frames").get<int>()) + " of " +
                        std::to_string(flow.at("frames").get<int>()) + " frames"));
  EXPECT_EQ(f->at("since_step"), 0);
  EXPECT_EQ(f->at("confidence"), "high");  // every frame vanished, 20 frames
}

TEST_F(AgentJson, EmbeddingFindingsWithHostileTextAndNaNStayValidJson) {
  const fs::path run = make_run(fresh_dir("agent-json-emb") / "r", nullptr);
  EmbeddingRunSummary summary;
  EmbeddingTableSummary table;
  table.report.layer = "item \"q\"\nx";  // a quote and a newline
  EmbeddingDiagnostic d;
  d.type = "ZOMBIE_ROWS";
  d.premise = "8 of 30 rows \"flip\"\n";
  d.implies = "they thrash";
  d.action = "LOWER_EMBEDDING_LR_OR_ENABLE_AUTO_FIX";
  d.advice = "Lower this table's learning rate.";
  d.expected_effect = "fewer zombie rows";
  d.confidence = 0.9;
  d.evidence = {{"zombie_rows", 8}, {"mean_cosine", kNaN}};
  table.report.diagnostics = {d};
  summary.tables = {table};
  save_embedding_summary(run.string(), summary);
  const Json doc = report_json(run, 1);
  ASSERT_EQ(doc.at("findings").size(), 1u);
  const Json& f = doc.at("findings").at(0);
  EXPECT_EQ(f.at("kind"), "embedding");
  EXPECT_EQ(f.at("node"), "item \"q\"\nx");
  EXPECT_EQ(f.at("premise"), d.premise);
  EXPECT_EQ(f.at("action"), d.advice);
  EXPECT_EQ(f.at("action_code"), d.action);
  EXPECT_EQ(f.at("confidence"), "high");
  EXPECT_TRUE(f.at("since_step").is_null());
  EXPECT_EQ(f.at("evidence").at(0).at("value"), 8);
  EXPECT_TRUE(f.at("evidence").at(1).at("value").is_null());  // NaN is null
  // The same finding, as the HTML report shows it.
  const fs::path page = run.parent_path() / "page.html";
  ASSERT_EQ(run_cli("html " + run.string() + " -o " + page.string()).code, 0);
  EXPECT_THAT(test::slurp(page), HasSubstr("they thrash What to do: " + html_escape(d.advice) +
                                           " <span class=\"evidence\">(high confidence)"));
  fs::remove_all(run.parent_path());
}

TEST_F(AgentJson, NaNEverywhereAndHostileNodeNamesGiveValidJson) {
  const fs::path run = make_run(fresh_dir("agent-json-nan") / "r", [](RunWriter& w, int s) {
    Stats all_nan;
    all_nan.count = all_nan.nan = 10;
    w.add(Record{s, "a,b \"q\"\nx", Site::kParamGrad, all_nan});
    w.add(Record{s, "a,b \"q\"\nx", Site::kActivation, all_nan});
    w.add(Record{s, "v\xff", Site::kParamGrad, grad(3e-9)});  // invalid UTF-8
  });
  const test::Result r = run_cli("report --json " + run.string());
  EXPECT_EQ(r.code, 1);
  const Json doc = Json::parse(r.out);
  const Json* f = find(doc.at("findings"), "NAN", "a,b \"q\"\nx");
  ASSERT_NE(f, nullptr) << r.out;
  EXPECT_EQ(f->at("since_step"), 0);
  EXPECT_EQ(f->at("evidence").at(0).at("value"), 2 * 10 * kSteps);  // NaN elements, both sites
  EXPECT_THAT(f->at("premise").get<std::string>(), HasSubstr("400 NaN elements"));
  // The node's means had no finite value: null, not NaN, in the report part.
  for (const Json& n : doc.at("gradscope_report").at("nodes")) {
    if (n.at("node") == "a,b \"q\"\nx") {
      EXPECT_TRUE(n.at("param_grad_l2").is_null());
    }
  }
  // Invalid UTF-8 in a name is replaced (U+FFFD), the finding kept.
  EXPECT_NE(find(doc.at("findings"), "VANISHING", "v\xEF\xBF\xBD"), nullptr);
  fs::remove_all(run.parent_path());
}

TEST_F(AgentJson, HtmlWhatToDoShowsTheJsonsFindings) {
  const fs::path page = *dir_ / "vanishing.html";
  ASSERT_EQ(run_cli("html " + (*dir_ / "VANISHING").string() + " -o " + page.string()).code, 0);
  const std::string html = test::slurp(page);
  const Json doc = report_json(*dir_ / "VANISHING", 1);
  for (const Json& f : doc.at("findings")) {
    EXPECT_THAT(html, HasSubstr(html_escape(f.at("action").get<std::string>())));
    EXPECT_THAT(html, HasSubstr(html_escape(f.at("premise").get<std::string>())));
  }
}

TEST_F(AgentJson, DiffJsonNamesTheFindingsNewInBAndGoneFromIt) {
  const std::string good = (*dir_ / "healthy").string(), bad = (*dir_ / "VANISHING").string();
  test::Result r = run_cli("diff --json " + good + " " + bad);
  EXPECT_EQ(r.code, 1) << r.err;
  Json doc = Json::parse(r.out);
  EXPECT_EQ(doc.at("findings_version"), 1);
  const Json& d = doc.at("gradscope_diff");
  EXPECT_EQ(d.at("worse"), 1);
  EXPECT_EQ(d.at("a").at("unhealthy"), false);
  EXPECT_EQ(d.at("b").at("unhealthy"), true);
  const Json* body = nullptr;
  for (const Json& n : d.at("nodes"))
    if (n.at("node") == "body") body = &n;
  ASSERT_NE(body, nullptr);
  EXPECT_TRUE(body->at("flags_a").is_null());  // absent in A
  EXPECT_EQ(body->at("flags_b"), Json::array({"VANISHING"}));
  EXPECT_EQ(body->at("change"), "worse");
  EXPECT_NE(find(doc.at("findings_new_in_b"), "VANISHING", "body"), nullptr);
  EXPECT_EQ(doc.at("findings_gone_in_b"), Json::array());
  r = run_cli("diff --json " + bad + " " + good);
  EXPECT_EQ(r.code, 0);
  doc = Json::parse(r.out);
  EXPECT_EQ(doc.at("findings_new_in_b"), Json::array());
  EXPECT_NE(find(doc.at("findings_gone_in_b"), "VANISHING", "body"), nullptr);
}

// --fail-on and --min-confidence choose which findings new in B fail the diff (a CI gate); the
// findings are listed in the text whatever they choose.
TEST_F(AgentJson, DiffFailOnPicksTheKindsAndTypesThatFail) {
  const std::string good = (*dir_ / "healthy").string(), bad = (*dir_ / "VANISHING").string();
  test::Result r = run_cli("diff " + good + " " + bad);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("findings new in B: "));
  EXPECT_THAT(r.out, HasSubstr("VANISHING"));
  // Only embedding findings fail: the new VANISHING is listed, and the exit is 0.
  r = run_cli("diff --fail-on embedding " + good + " " + bad);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("fail the diff under --fail-on"));
  r = run_cli("diff --fail-on embedding,VANISHING " + good + " " + bad);
  EXPECT_EQ(r.code, 1);
  r = run_cli("diff --json --fail-on trees --fail-on loss_scale " + good + " " + bad);
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(Json::parse(r.out).at("gradscope_diff").at("failing_findings"), 0);
  r = run_cli("diff --json " + good + " " + bad);
  const Json doc = Json::parse(r.out);
  const std::size_t new_in_b = doc.at("findings_new_in_b").size();
  EXPECT_EQ(doc.at("gradscope_diff").at("failing_findings"), new_in_b);
  // Confidence: a gate at high fails only for the new VANISHING findings of high confidence.
  std::size_t high = 0;
  for (const Json& f : doc.at("findings_new_in_b")) high += f.at("type") == "VANISHING" && f.at("confidence") == "high";
  EXPECT_GT(high, 0u);
  r = run_cli("diff --json --fail-on VANISHING --min-confidence high " + good + " " + bad);
  EXPECT_EQ(Json::parse(r.out).at("gradscope_diff").at("failing_findings"), high);
  EXPECT_EQ(r.code, high > 0 ? 1 : 0);
  // The attention flags gate as any other type: a run whose attention grew fails against the
  // healthy one under --fail-on ATTENTION_LOGIT_GROWTH, not under the collapse alone.
  const std::string grown = (*dir_ / "ATTENTION_LOGIT_GROWTH").string();
  EXPECT_EQ(run_cli("diff --fail-on ATTENTION_LOGIT_GROWTH " + good + " " + grown).code, 1);
  EXPECT_EQ(run_cli("diff --fail-on ATTENTION_ENTROPY_COLLAPSE " + good + " " + grown).code, 0);
  // Bad selectors are usage errors naming what is wrong.
  r = run_cli("diff --fail-on zombies " + good + " " + bad);
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, HasSubstr("'zombies' is neither a finding kind"));
  EXPECT_EQ(run_cli("diff --min-confidence certain " + good + " " + bad).code, 2);
  // A typo of a type is refused, not a gate that never fires (it was accepted: any upper-case
  // word passed), and the error lists what is valid.
  for (const char* typo : {"NANN", "VANISHNG", "ZOMBIE", "HEALTHY", "GRADIENT_SPKE", "LOSS_SCALE", "Module"}) {
    r = run_cli(std::string("diff --fail-on ") + typo + " " + good + " " + bad);
    EXPECT_EQ(r.code, 2) << typo;
    EXPECT_THAT(r.err, HasSubstr(std::string("'") + typo + "' is neither a finding kind nor a finding type")) << typo;
    EXPECT_THAT(r.err, HasSubstr("module: VANISHING EXPLODING NAN")) << typo;
    EXPECT_THAT(r.err, HasSubstr("embedding: ZOMBIE_ROWS")) << typo;
  }
  // Every type of every kind is accepted.
  for (FindingKind k : kFindingKinds)
    for (const std::string& type : finding_types(k))
      EXPECT_NE(run_cli("diff --fail-on " + type + " " + good + " " + bad).code, 2) << type;
}

TEST_F(AgentJson, LsJsonAndCheckExitCodes) {
  const fs::path dir = fresh_dir("agent-json-ls");
  make_run(dir / "a-good", nullptr);
  make_run(dir / "b-also-good", nullptr);
  test::Result r = run_cli("ls --check " + dir.string());
  EXPECT_EQ(r.code, 0) << r.err;
  r = run_cli("ls --json --check " + dir.string());
  EXPECT_EQ(r.code, 0);
  Json doc = Json::parse(r.out);
  ASSERT_EQ(doc.at("gradscope_ls").at("runs").size(), 2u);
  EXPECT_EQ(doc.at("gradscope_ls").at("runs").at(0).at("name"), "a-good");
  EXPECT_EQ(doc.at("gradscope_ls").at("runs").at(0).at("unhealthy"), false);
  EXPECT_EQ(doc.at("gradscope_ls").at("runs").at(0).at("findings"), Json::array());

  // An unreadable run: 3 with --check (nothing unhealthy was seen), 0 without.
  fs::create_directories(dir / "c-broken");
  std::ofstream(dir / "c-broken" / "run.db") << "not sqlite";
  EXPECT_EQ(run_cli("ls --check " + dir.string()).code, 3);
  EXPECT_EQ(run_cli("ls " + dir.string()).code, 0);

  // An unhealthy run: 1 with --check, whatever else is there; still 0 without.
  make_run(dir / "d \"bad\"\nrun", pathologies().at("EXPLODING"));
  EXPECT_EQ(run_cli("ls " + dir.string()).code, 0);
  r = run_cli("ls --check " + dir.string());
  EXPECT_EQ(r.code, 1);
  EXPECT_THAT(r.out, HasSubstr("unhealthy: 1 flagged, worst body [EXPLODING]"));
  r = run_cli("ls --check --json " + dir.string());
  EXPECT_EQ(r.code, 1);
  doc = Json::parse(r.out);
  const Json& runs = doc.at("gradscope_ls").at("runs");
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_TRUE(runs.at(2).contains("error"));
  EXPECT_EQ(runs.at(3).at("name"), "d \"bad\"\nrun");
  EXPECT_EQ(runs.at(3).at("unhealthy"), true);
  EXPECT_NE(find(runs.at(3).at("findings"), "EXPLODING", "body"), nullptr);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradscope
