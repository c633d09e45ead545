// Findings (core/findings/findings.h): one per flag with the report's own numbers in its premise,
// the documented confidence mapping, the flow, embedding and tree findings, and exact_number.
#include "gradscope/core/findings/findings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <regex>
#include <set>

#include "../common/stats_fixture.h"
#include "gradscope/core/audit/rules.h"
#include "gradscope/core/findings/kinds.h"
#include "gradscope/core/vocabulary/thresholds.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Stats grad(double l2) { return test::with_l2(l2, 10); }

// 10 elements of which `zero` are zero and `saturated` are beyond the saturation threshold.
Stats activation(int64_t zero, int64_t saturated) { return test::with_l2(1, 10, zero, saturated); }

// Every number written in `premise`, after removing the texts the rule wrote (measure names
// such as "mean param_grad L2 over 20 steps", node names in details), which are not values.
std::vector<double> numbers_in(std::string premise, const std::vector<std::string>& texts) {
  for (const std::string& t : texts)
    for (std::size_t at; !t.empty() && (at = premise.find(t)) != std::string::npos;)
      premise.erase(at, t.size());
  std::vector<double> out;
  const std::regex number(R"((-?\d+(\.\d+)?(e[-+]?\d+)?|nan|-?inf))");
  for (auto it = std::sregex_iterator(premise.begin(), premise.end(), number);
       it != std::sregex_iterator(); ++it)
    out.push_back(std::stod((*it)[1]));
  return out;
}

// A report with one node per pathology, over `steps` steps.
Report pathology_report(int steps) {
  ReportBuilder b;
  for (int s = 0; s < steps; ++s) {
    b.add(Record{s, "vanish", Site::kParamGrad, grad(3e-9)});
    b.add(Record{s, "explode", Site::kParamGrad, grad(2.5e5)});
    Stats nan = grad(1);
    nan.nan = s >= 2 ? 4 : 0;
    nan.count += nan.nan;
    b.add(Record{s, "nan", Site::kParamGrad, nan});
    b.add(Record{s, "dead", Site::kParamGrad, grad(1)});
    b.add(Record{s, "dead", Site::kActivation, activation(10, 0)});
    b.add(Record{s, "sat", Site::kParamGrad, grad(1)});
    b.add(Record{s, "sat", Site::kPreActivation, activation(0, 8)});
    b.add(Record{s, "still", Site::kParamGrad, grad(1)});
    b.add(Record{s, "still", Site::kParam, grad(1)});
    b.add(Record{s, "still", Site::kUpdate, grad(2e-9)});
    b.add(Record{s, "enc", Site::kParamGrad, grad(1)});  // its child's flag rolls up to it
    b.add(Record{s, "enc/fc", Site::kParamGrad, grad(4e-9)});
  }
  return b.build();
}

const Finding* find(const std::vector<Finding>& all, const std::string& type,
                    const std::string& node) {
  for (const Finding& f : all)
    if (f.type == type && f.node == node) return &f;
  return nullptr;
}

TEST(Findings, OnePerFlagWithTheReportsNumbersInThePremise) {
  const Report report = pathology_report(20);
  const std::vector<Finding> all = module_findings(report);
  std::size_t evidence = 0;
  for (const NodeReport& n : report.nodes) evidence += n.evidence.size();
  ASSERT_EQ(all.size(), evidence);
  for (const auto& [type, node] :
       std::vector<std::pair<std::string, std::string>>{{"VANISHING", "vanish"},
                                                        {"EXPLODING", "explode"},
                                                        {"NAN", "nan"},
                                                        {"DEAD", "dead"},
                                                        {"SATURATED", "sat"},
                                                        {"STAGNANT", "still"},
                                                        {"VANISHING", "enc/fc"},
                                                        {"VANISHING", "enc"}})
    EXPECT_NE(find(all, type, node), nullptr) << type;

  for (const NodeReport& n : report.nodes) {
    for (const Evidence& e : n.evidence) {
      const Finding* f = find(all, flag_name(e.flag), n.node);
      ASSERT_NE(f, nullptr) << n.node;
      SCOPED_TRACE(f->premise);
      EXPECT_EQ(f->kind, FindingKind::kModule);
      EXPECT_EQ(f->since_step, e.first_step);
      // NAN and INF are advised by where the values were born (the report's origin).
      const FlagGuidance& g = nonfinite_guidance(e.flag, report.nonfinite_origin.phase);
      EXPECT_EQ(f->action, std::string(g.action));
      EXPECT_EQ(f->implies, std::string(g.implies));
      if (e.flag != Flag::kNaN && e.flag != Flag::kInf) {
        EXPECT_EQ(f->action, std::string(flag_advice(e.flag)));
      }
      EXPECT_FALSE(f->expected_effect.empty());
      // Each number of the premise is one the report holds, exactly.
      const std::set<double> held = {e.value,
                                     e.threshold,
                                     static_cast<double>(e.first_step),
                                     static_cast<double>(n.steps),
                                     static_cast<double>(n.channels),
                                     static_cast<double>(n.nonfinite_steps)};
      // The margin, "(1.58x the threshold)", is checked below; the other numbers are the
      // report's own, shown with four significant digits.
      std::string premise = f->premise;
      const auto margin = premise.find("x the threshold)");
      if (margin != std::string::npos) {
        const auto open = premise.rfind(" (", margin);
        const double ratio = std::stod(premise.substr(open + 2, margin - open - 2));
        EXPECT_NEAR(ratio, e.value / e.threshold, 5e-3 * std::fabs(e.value / e.threshold)) << premise;
        premise.erase(open, margin + 16 - open);
      }
      const std::vector<double> written = numbers_in(premise, {e.measure, e.detail, " (at the threshold)"});
      EXPECT_FALSE(written.empty());
      for (double v : written) {
        bool shown = false;
        for (double h : held) shown = shown || v == h || std::fabs(v - h) <= 5e-4 * std::fabs(h);
        EXPECT_TRUE(shown) << v << " in " << f->premise;
      }
      // The measured value is in the evidence with every digit.
      ASSERT_FALSE(f->evidence.empty());
      EXPECT_EQ(f->evidence[0].name, e.measure);
      EXPECT_EQ(f->evidence[0].value, e.value);
    }
  }
  const Finding* v = find(all, "VANISHING", "vanish");
  EXPECT_EQ(v->evidence[0].threshold, report.thresholds.grad_lo);
  EXPECT_EQ(v->evidence[0].comparison, "<");
  // 3e-9 against 1e-7: the value with four significant digits and its margin.
  EXPECT_THAT(v->premise, HasSubstr(" = 3e-09 < grad_lo 1e-07 (0.03x the threshold), first at step 0; 20 steps recorded"));
  EXPECT_THAT(find(all, "NAN", "nan")->premise, HasSubstr("first at step 2"));
  EXPECT_EQ(find(all, "NAN", "nan")->since_step, 2);
  const Finding* rolled = find(all, "VANISHING", "enc");
  EXPECT_EQ(rolled->premise, "1 submodules flagged VANISHING (in: fc)");
  EXPECT_EQ(rolled->since_step, 0);
  EXPECT_EQ(rolled->confidence, Confidence::kHigh);
}

// A NaN's advice follows where it was born: the same node, flagged NAN, told what reaches it.
TEST(Findings, NanAdviceFollowsWhereTheValuesWereBorn) {
  auto nan_at = [](Site site) {
    ReportBuilder b;
    for (int s = 0; s < 4; ++s) {
      Stats bad = grad(1);
      bad.nan = s >= 2 ? 3 : 0;
      bad.count += bad.nan;
      b.add(Record{s, "fc", Site::kActivation, site == Site::kActivation ? bad : grad(1)});
      b.add(Record{s, "fc", Site::kParamGrad, site == Site::kParamGrad ? bad : grad(1)});
      b.add(Record{s, "fc", Site::kUpdate, site == Site::kUpdate ? bad : grad(0.01)});
    }
    const Report r = b.build();
    const std::vector<Finding> all = module_findings(r);
    const Finding* f = find(all, "NAN", "fc");
    EXPECT_NE(f, nullptr);
    return std::make_pair(r.nonfinite_origin.phase, f ? f->action : std::string());
  };
  const auto forward = nan_at(Site::kActivation);
  const auto backward = nan_at(Site::kParamGrad);
  const auto optimizer = nan_at(Site::kUpdate);
  EXPECT_EQ(forward.first, "forward");
  EXPECT_EQ(backward.first, "backward");
  EXPECT_EQ(optimizer.first, "optimizer");
  EXPECT_THAT(forward.second, HasSubstr("clipping gradients or a lower learning rate does not reach"));
  EXPECT_THAT(backward.second, HasSubstr("unbounded derivatives"));
  EXPECT_THAT(optimizer.second, HasSubstr("Lower the learning rate"));
  EXPECT_EQ(forward.second, nonfinite_guidance(Flag::kNaN, "forward").action);
  // Other flags, and an unknown phase, keep the flag's own guidance.
  EXPECT_STREQ(nonfinite_guidance(Flag::kDead, "forward").action, flag_guidance(Flag::kDead).action);
  EXPECT_STREQ(nonfinite_guidance(Flag::kNaN, "").action, flag_guidance(Flag::kNaN).action);
}

TEST(Findings, HealthyReportHasNoFindings) {
  ReportBuilder b;
  for (int s = 0; s < 20; ++s) {
    b.add(Record{s, "fc1", Site::kParamGrad, grad(0.5)});
    b.add(Record{s, "fc1", Site::kActivation, activation(2, 0)});
  }
  const Report r = b.build();
  ASSERT_TRUE(r.healthy());
  EXPECT_TRUE(module_findings(r).empty());
  FlowSummary flow;  // healthy by default
  EXPECT_FALSE(flow_finding(flow, r.thresholds).has_value());
}

// The mapping of docs/agent-json.md, "Confidence".
TEST(Findings, ConfidenceFollowsTheMarginAndTheSteps) {
  const Thresholds t;
  NodeReport n;
  n.steps = 20;
  auto level = [&](Flag f, double value, double threshold) {
    Evidence e;
    e.flag = f;
    e.value = value;
    e.threshold = threshold;
    return module_confidence(e, n, t);
  };
  // Ratio measures: orders of magnitude past the threshold (>= 1 high, >= 0.3 medium).
  EXPECT_EQ(level(Flag::kVanishing, 1e-9, 1e-7), Confidence::kHigh);
  EXPECT_EQ(level(Flag::kVanishing, 1e-8, 1e-7), Confidence::kHigh);    // exactly 10x
  EXPECT_EQ(level(Flag::kVanishing, 4e-8, 1e-7), Confidence::kMedium);  // 2.5x
  EXPECT_EQ(level(Flag::kVanishing, 9e-8, 1e-7), Confidence::kLow);     // 1.1x
  EXPECT_EQ(level(Flag::kVanishing, 0, 1e-7), Confidence::kHigh);
  EXPECT_EQ(level(Flag::kExploding, 2e4, 1e3), Confidence::kHigh);
  EXPECT_EQ(level(Flag::kExploding, 3e3, 1e3), Confidence::kMedium);
  EXPECT_EQ(level(Flag::kExploding, 1.5e3, 1e3), Confidence::kLow);
  EXPECT_EQ(level(Flag::kStagnant, 7.75e-7, 1e-6), Confidence::kLow);
  // Fractions: share of the range from the threshold to 1 (>= 0.5 high, >= 0.1 medium).
  EXPECT_EQ(level(Flag::kDead, 1.0, 0.95), Confidence::kHigh);
  EXPECT_EQ(level(Flag::kDead, 0.96, 0.95), Confidence::kMedium);  // 0.2 of the range
  EXPECT_EQ(level(Flag::kDead, 0.951, 0.95), Confidence::kLow);
  EXPECT_EQ(level(Flag::kSaturated, 0.8, 0.5), Confidence::kHigh);
  EXPECT_EQ(level(Flag::kSaturated, 0.6, 0.5), Confidence::kMedium);
  EXPECT_EQ(level(Flag::kSaturated, 0.52, 0.5), Confidence::kLow);
  EXPECT_EQ(level(Flag::kLeakage, 0.995, 0.98), Confidence::kHigh);    // 0.75 of the range
  EXPECT_EQ(level(Flag::kLeakage, 0.983, 0.98), Confidence::kMedium);  // 0.15
  EXPECT_EQ(level(Flag::kLeakage, 0.981, 0.98), Confidence::kLow);
  // Observed facts: high.
  EXPECT_EQ(level(Flag::kNaN, 1, 0), Confidence::kHigh);
  EXPECT_EQ(level(Flag::kInf, 1, 0), Confidence::kHigh);
  EXPECT_EQ(level(Flag::kFrozen, 0, 0), Confidence::kHigh);
  // Channels: dead share of channels past channel_frac.
  n.channels = 10;
  EXPECT_EQ(level(Flag::kDeadChannels, 8, t.dead_frac), Confidence::kHigh);
  EXPECT_EQ(level(Flag::kIgnoredChannels, 8, t.dead_frac), Confidence::kHigh);
  EXPECT_EQ(level(Flag::kDeadChannels, 4, t.dead_frac), Confidence::kMedium);  // (0.4-0.2)/0.8
  EXPECT_EQ(level(Flag::kDeadChannels, 2.5, t.dead_frac), Confidence::kLow);
  // Few steps cap it: under 10 at most medium, under 3 low.
  n.steps = 5;
  EXPECT_EQ(level(Flag::kVanishing, 1e-9, 1e-7), Confidence::kMedium);
  EXPECT_EQ(level(Flag::kNaN, 1, 0), Confidence::kMedium);
  n.steps = 2;
  EXPECT_EQ(level(Flag::kVanishing, 1e-9, 1e-7), Confidence::kLow);
  EXPECT_STREQ(confidence_name(Confidence::kHigh), "high");
  EXPECT_STREQ(confidence_name(Confidence::kMedium), "medium");
  EXPECT_STREQ(confidence_name(Confidence::kLow), "low");
}

TEST(Findings, FlowFindingCarriesTheSummarysCounts) {
  Thresholds t;
  FlowSummary flow;
  flow.frames = 40;
  flow.issue_frames = 14;
  flow.issue_ratio = 14.0 / 40.0;
  flow.health = FlowHealth::kProblemsDetected;
  NodeFlow a;
  a.node = "enc";
  a.frames = 40;
  a.vanishing_frames = 14;
  a.first_vanishing = 7;
  flow.nodes = {a};
  const auto f = flow_finding(flow, t);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->type, "GRADIENT_FLOW");
  EXPECT_EQ(f->kind, FindingKind::kFlow);
  EXPECT_EQ(f->since_step, 7);
  EXPECT_THAT(f->premise, HasSubstr("14 of 40 frames (issue ratio 0.35)"));
  EXPECT_EQ(f->evidence[0].value, 0.35);
  EXPECT_EQ(f->evidence[0].threshold, t.flow_problems_ratio);
  EXPECT_EQ(f->confidence, Confidence::kMedium);  // 0.35: above problems, below critical
  flow.issue_ratio = 0.6;
  EXPECT_EQ(flow_finding(flow, t)->confidence, Confidence::kHigh);
  flow.issue_ratio = 0.2;
  EXPECT_EQ(flow_finding(flow, t)->confidence, Confidence::kLow);
}

TEST(Findings, EmbeddingAndTreeFindingsKeepTheirRulesTexts) {
  EmbeddingReport table;
  table.layer = "item";
  EmbeddingDiagnostic d;
  d.type = "ZOMBIE_ROWS";
  d.premise = "12 of 40 rows flip";
  d.implies = "they thrash";
  d.action = "LOWER_EMBEDDING_LR_OR_ENABLE_AUTO_FIX";
  d.advice = "Lower this table's learning rate.";
  d.expected_effect = "fewer zombie rows";
  d.confidence = 0.62;
  d.evidence = {{"zombie_rows", 12}, {"mean_cosine", kNaN}};
  table.diagnostics = {d};
  const std::vector<Finding> e = embedding_findings(table);
  ASSERT_EQ(e.size(), 1u);
  EXPECT_EQ(e[0].node, "item");
  EXPECT_EQ(e[0].action, d.advice);
  EXPECT_EQ(e[0].action_code, d.action);
  EXPECT_EQ(e[0].confidence, Confidence::kMedium);
  EXPECT_TRUE(std::isnan(e[0].evidence[1].value));
  EXPECT_EQ(e[0].evidence.back().name, "confidence_score");
  EXPECT_EQ(e[0].evidence.back().value, 0.62);
  for (const auto& [score, expected] :
       std::vector<std::pair<double, Confidence>>{{0.8, Confidence::kHigh},
                                                  {0.79, Confidence::kMedium},
                                                  {0.5, Confidence::kMedium},
                                                  {0.49, Confidence::kLow}}) {
    table.diagnostics[0].confidence = score;
    EXPECT_EQ(embedding_findings(table)[0].confidence, expected) << score;
  }
  d.advice.clear();  // an older embedding.json: the code stands in
  table.diagnostics = {d};
  EXPECT_EQ(embedding_findings(table)[0].action, d.action);

  TreeDynamicsReport trees;
  trees.rounds = 200;
  TreeFinding overfit;
  overfit.flag = TreeFlag::kOverfitting;
  overfit.first_round = 6;
  overfit.value = 3.15;
  overfit.threshold = 0.02;
  overfit.measure = "relative rise";
  overfit.detail = "lowest after 6 rounds";
  overfit.advice = "Stop at round 6.";
  trees.findings = {overfit};
  const std::vector<Finding> t = tree_findings(trees);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].type, "OVERFITTING");
  EXPECT_EQ(t[0].node, "trees");
  EXPECT_EQ(t[0].since_step, 6);
  EXPECT_EQ(t[0].action, "Stop at round 6.");
  EXPECT_THAT(t[0].premise, HasSubstr("relative rise = 3.15 > 0.02 (158x the threshold), from round 6 of 200"));
  EXPECT_EQ(t[0].confidence, Confidence::kHigh);
  // Relative margin |value - threshold| / |threshold|: >= 1 high, >= 0.25 medium.
  trees.findings[0].value = 0.03;  // 0.5 past
  EXPECT_EQ(tree_findings(trees)[0].confidence, Confidence::kMedium);
  trees.findings[0].value = 0.022;  // 0.1 past
  EXPECT_EQ(tree_findings(trees)[0].confidence, Confidence::kLow);
}

// Each row of the flag table is what every reader of a flag gets: its name, severity and
// guidance, a finding type the registry and `diff --fail-on` accept, and (for a compared flag)
// a threshold of the one threshold table with the comparison findings print.
TEST(FlagTable, EveryRowReachesEveryReader) {
  std::set<std::string> thresholds;
  for (const ThresholdField<Thresholds>& f : threshold_fields()) thresholds.insert(f.name);
  for (const FlagInfo& row : kFlags) {
    SCOPED_TRACE(row.name);
    EXPECT_STREQ(flag_name(row.flag), row.name);
    EXPECT_EQ(kSeverityOrder[flag_severity(row.flag)], row.flag);
    EXPECT_STREQ(flag_guidance(row.flag).action, row.guidance.action);
    if (row.flag == Flag::kHealthy) continue;
    EXPECT_TRUE(is_finding_type(row.name));
    EXPECT_NE(std::string(row.guidance.implies), "");
    EXPECT_NE(std::string(row.guidance.action), "");
    EXPECT_NE(std::string(row.guidance.expected_effect), "");
    const bool compared = std::string(flag_comparison(row.margin)) != "";
    EXPECT_EQ(std::string(row.threshold) != "", compared);
    if (compared) {
      EXPECT_EQ(thresholds.count(row.threshold), 1u) << row.threshold;
    }
  }
  EXPECT_STREQ(flag_name(static_cast<Flag>(kFlagCount)), "INVALID");
}

// The ranking's reasons, each a pair written out here (kSeverityOrder's comment says why): a
// cause ranks above its effects. Severities are 0 (HEALTHY) to kFlagCount - 1, each taken once.
TEST(FlagTable, SeveritiesRankCausesAboveTheirEffects) {
  auto above = [](Flag a, Flag b) { return flag_severity(a) > flag_severity(b); };
  EXPECT_EQ(flag_severity(Flag::kHealthy), 0);
  EXPECT_TRUE(above(Flag::kDead, Flag::kVanishing));  // zero outputs cut the backward path
  EXPECT_TRUE(above(Flag::kAttentionLogitGrowth, Flag::kAttentionEntropyCollapse));
  EXPECT_TRUE(above(Flag::kAttentionEntropyCollapse, Flag::kExploding));
  for (Flag effect : {Flag::kNaN, Flag::kInf, Flag::kSaturated, Flag::kStagnant, Flag::kExploding})
    EXPECT_TRUE(above(Flag::kGradientSpike, effect)) << flag_name(effect);
  EXPECT_TRUE(above(Flag::kNaN, Flag::kInf));
  std::set<int> taken;
  for (int f = 0; f < kFlagCount; ++f) {
    if (static_cast<Flag>(f) != Flag::kDepthGradientImbalance)
      EXPECT_TRUE(above(Flag::kDepthGradientImbalance, static_cast<Flag>(f)));  // the stall heads them all
    taken.insert(flag_severity(static_cast<Flag>(f)));
  }
  EXPECT_EQ(taken.size(), static_cast<std::size_t>(kFlagCount));
  EXPECT_EQ(*taken.rbegin(), kFlagCount - 1);
}

// Every rule raises through NodeReport::raise: HEALTHY goes, and a flag does not join one it
// yields to (DEAD_CHANNELS on a DEAD node; DEPTH_GRADIENT_IMBALANCE on a VANISHING node).
TEST(FlagTable, RaiseClearsHealthyAndYieldsToTheFlagThatSaysMore) {
  NodeReport r;
  r.flags.insert(Flag::kHealthy);
  EXPECT_TRUE(r.raise({Flag::kDeadChannels, Site::kActivation, 3, 5, 0.95, "channels", "channels 1, 2"}));
  EXPECT_FALSE(r.flags.contains(Flag::kHealthy));
  EXPECT_TRUE(r.flags.contains(Flag::kDeadChannels));
  ASSERT_EQ(r.evidence.size(), 1u);
  EXPECT_EQ(r.evidence[0].first_step, 3);

  NodeReport dead;
  ASSERT_TRUE(dead.raise({Flag::kDead, Site::kActivation, 2, 0.99, 0.95, "zeros", {}}));
  EXPECT_FALSE(dead.raise({Flag::kDeadChannels, Site::kActivation, 3, 5, 0.95, "channels", {}}));
  EXPECT_FALSE(dead.flags.contains(Flag::kDeadChannels));
  EXPECT_EQ(dead.evidence.size(), 1u);

  NodeReport vanishing;
  ASSERT_TRUE(vanishing.raise({Flag::kVanishing, Site::kParamGrad, 0, 1e-9, 1e-7, "grad", {}}));
  EXPECT_FALSE(vanishing.raise({Flag::kDepthGradientImbalance, Site::kParamGrad, 0, 500, 100, "depth", {}}));
  // Raised the other way round, the flag that says more replaces the one that yields to it.
  NodeReport later;
  ASSERT_TRUE(later.raise({Flag::kDeadChannels, Site::kActivation, 3, 5, 0.95, "channels", {}}));
  ASSERT_TRUE(later.raise({Flag::kLeakage, Site::kActivation, 4, 0.97, 0.9, "cka", {}}));
  EXPECT_TRUE(later.raise({Flag::kDead, Site::kActivation, 2, 0.99, 0.95, "zeros", {}}));
  EXPECT_FALSE(later.flags.contains(Flag::kDeadChannels));
  EXPECT_TRUE(later.flags.contains(Flag::kLeakage));
  ASSERT_EQ(later.evidence.size(), 2u);
  EXPECT_EQ(later.evidence[0].flag, Flag::kLeakage);
  EXPECT_EQ(later.evidence[1].flag, Flag::kDead);
}

// The registry of finding kinds and types (core/findings/kinds.h) holds what the rules make:
// every flag but HEALTHY, every tree flag, and no type twice within a kind.
TEST(FindingKinds, HoldEveryTypeTheRulesMakeOnce) {
  std::set<std::string> kinds;
  for (FindingKind k : kFindingKinds) {
    const std::string name = finding_kind_name(k);
    EXPECT_TRUE(kinds.insert(name).second) << name;
    EXPECT_EQ(parse_finding_kind(name), k);
    const std::vector<std::string> types = finding_types(k);
    EXPECT_FALSE(types.empty()) << name;
    EXPECT_EQ(std::set<std::string>(types.begin(), types.end()).size(), types.size()) << name;
    for (const std::string& t : types) EXPECT_TRUE(is_finding_type(t)) << t;
  }
  EXPECT_EQ(kinds, (std::set<std::string>{"module", "flow", "embedding", "trees", "loss_scale", "loss"}));
  const std::vector<std::string> module = finding_types(FindingKind::kModule);
  EXPECT_EQ(module.size(), static_cast<std::size_t>(kFlagCount - 1));
  for (int f = 1; f < kFlagCount; ++f) EXPECT_TRUE(is_finding_type(flag_name(static_cast<Flag>(f))));
  for (int f = 0; f < kTreeFlagCount; ++f) EXPECT_TRUE(is_finding_type(tree_flag_name(static_cast<TreeFlag>(f))));
  EXPECT_EQ(finding_types(FindingKind::kEmbedding),
            (std::vector<std::string>{"ZOMBIE_ROWS", "DEAD_ROWS", "POPULARITY_BIAS", "NEGATIVE_SAMPLER_SKEW",
                                      "REPRESENTATION_COLLAPSE"}));
  // The findings the rules build carry a kind and type of the registry.
  EXPECT_EQ(tree_findings(TreeDynamicsReport{}).size(), 0u);
  EmbeddingReport table;
  EmbeddingDiagnostic d;
  d.type = kZombieRows;
  table.diagnostics = {d};
  const Finding e = embedding_findings(table).at(0);
  EXPECT_EQ(e.kind, FindingKind::kEmbedding);
  for (const char* no : {"", "HEALTHY", "NANN", "nan", "INVALID", "?", "module"}) EXPECT_FALSE(is_finding_type(no)) << no;
  EXPECT_FALSE(parse_finding_kind("Module"));
  EXPECT_FALSE(parse_finding_kind("NAN"));
}

TEST(Findings, ShownNumbersKeepFourDigitsAndCountsInFull) {
  EXPECT_EQ(shown_number(3.154526382119251), "3.155");
  EXPECT_EQ(shown_number(0.009993087595168836), "0.009993");
  EXPECT_EQ(shown_number(216000), "216000");
  EXPECT_EQ(shown_number(1e6), "1000000");
  EXPECT_EQ(shown_number(1.5e-7), "1.5e-07");
  EXPECT_EQ(shown_number(-0.5), "-0.5");
  EXPECT_EQ(shown_number(kNaN), "nan");
  EXPECT_EQ(shown_number(-kInf), "-inf");
  EXPECT_EQ(versus_threshold(0.009993087595168836, 0.01), "at the threshold");
  EXPECT_EQ(versus_threshold(3.154526382119251, 2), "1.58x the threshold");
  EXPECT_EQ(versus_threshold(1e-5, 0.01), "0.001x the threshold");
  EXPECT_EQ(versus_threshold(1, 0), "");
  EXPECT_EQ(versus_threshold(kNaN, 1), "");
}

TEST(Findings, ExactNumberReadsBackToTheSameDouble) {
  for (double v :
       {0.0, 1.0, -3.0, 1e-7, 7.054529855792558e-12, 0.1 + 0.2, 1e300, 123456789.0, -2.5e-308})
    EXPECT_EQ(std::stod(exact_number(v)), v) << exact_number(v);
  EXPECT_EQ(exact_number(1e-9), "1e-09");
  EXPECT_EQ(exact_number(20), "20");
  EXPECT_EQ(exact_number(kNaN), "nan");
  EXPECT_EQ(exact_number(kInf), "inf");
  EXPECT_EQ(exact_number(-kInf), "-inf");
}

}  // namespace
}  // namespace gradscope
