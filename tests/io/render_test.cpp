// Golden files for the table, JSON and CSV renderers, plus escaping of hostile node names.
// Regenerate after an intended change: GRADSCOPE_UPDATE_GOLDEN=1 ./io_tests
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gradscope/core/audit/rules.h"
#include "gradscope/core/vocabulary/thresholds.h"
#include "golden_util.h"
#include "gradscope/io/render/csv.h"
#include "gradscope/io/render/json.h"
#include "gradscope/io/render/table.h"

namespace gradscope {
namespace {

Stats summary(double l2, int64_t count, int64_t zeros = 0, int64_t nan = 0) {
  Stats s;
  s.count = count + nan;
  s.finite = count;
  s.nan = nan;
  s.zero = zeros;
  s.sum_sq = l2 * l2;
  s.sum = l2 / 2;
  s.sum_abs = l2;
  s.min = -l2;
  s.max = s.max_abs = l2;
  return s;
}

// A small run with one healthy node, one vanishing, one dead, one NaN, one never seen, one
// with dead channels and a submodule whose flag rolls up.
Report sample_report() {
  ReportBuilder b;
  b.declare("head");
  for (int step = 0; step < 3; ++step) {
    b.add({step, "embed", Site::kParamGrad, summary(0.5 + step, 640)});
    b.add({step, "embed", Site::kParam, summary(12.0, 640)});
    b.add({step, "embed", Site::kUpdate, summary(0.012 * (step + 1), 640)});
    b.add({step, "mixer", Site::kActivation, summary(2.0, 64, 16)});
    b.add({step, "mixer/proj", Site::kParamGrad, summary(1e-9, 64)});
    b.add(ChannelRecord{step, "mixer", {summary(1, 16, 16), summary(1, 16), summary(1, 16), summary(1, 16)},
                        {}, 2.5 + step});
    b.add({step, "trunk.0", Site::kActivation, summary(3.0, 256, 250)});
    b.add({step, "trunk.0", Site::kParamGrad, summary(2e-3, 4096)});
    b.add({step, "trunk.1", Site::kOutputGrad, summary(1e-9, 256)});
    b.add({step, "trunk.1", Site::kParamGrad, summary(3e-10, 4096)});
    b.add({step, "trunk.1", Site::kParam, summary(0.08, 4096)});
    b.add({step, "out", Site::kParamGrad, summary(0.2, 330, 0, step == 2 ? 3 : 0)});
  }
  return b.build();
}

using test::expect_golden;

TEST(Render, TableGolden) { expect_golden("report_table.txt", render_table(sample_report())); }
TEST(Render, JsonGolden) { expect_golden("report.json", render_json(sample_report())); }
TEST(Render, CsvGolden) { expect_golden("report.csv", render_csv(sample_report())); }

TEST(Render, EvidenceComparesTheWayItsFlagsRuleDoes) {
  // Every compared flag reads with its rule's comparison, from the registry: a flag added to
  // the registry cannot be shown the wrong way round (ATTENTION_ENTROPY_COLLAPSE once read ">").
  for (const FlagInfo& f : kFlags) {
    const std::string want = flag_comparison(f.margin);
    if (want.empty() || f.margin == FlagMargin::kChannelShare) continue;  // channel flags read "n ... of"
    Evidence e{f.flag, Site::kActivation, 3, 0.5, 0.25, "a measure", {}};
    EXPECT_NE(describe_evidence(e).find("a measure = 0.5 " + want + " 0.25"), std::string::npos)
        << f.name << ": " << describe_evidence(e);
  }
}

TEST(Render, JsonHasNullForAbsentMeasuresAndParses) {
  const auto doc = nlohmann::json::parse(render_json(sample_report()));
  const auto& nodes = doc["gradscope_report"]["nodes"];
  ASSERT_EQ(nodes.size(), 7u);
  EXPECT_TRUE(nodes[0]["param_grad_l2"].is_null());  // head: never recorded
  EXPECT_EQ(nodes[0]["flags"][0], "NO_DATA");
  EXPECT_EQ(doc["gradscope_report"]["healthy"], false);
  EXPECT_EQ(doc["gradscope_report"]["flagged_worst_first"][0], "out");
}

TEST(Render, HostileNodeNamesSurviveJsonAndCsv) {
  const std::string name = "a,b \"quoted\"\nline2 </script>";
  ReportBuilder b;
  b.add({0, name, Site::kParamGrad, summary(1.0, 10)});
  const Report r = b.build();
  const auto doc = nlohmann::json::parse(render_json(r, -1));
  EXPECT_EQ(doc["gradscope_report"]["nodes"][0]["node"], name);
  const std::string csv = render_csv(r);
  EXPECT_NE(csv.find("\"a,b \"\"quoted\"\"\nline2 </script>\",1,"), std::string::npos) << csv;
}

TEST(Render, TableShowsControlCharactersInNamesEscaped) {
  ReportBuilder b;
  b.add({0, "a\nb\tc", Site::kParamGrad, summary(1e-9, 10)});
  const std::string table = render_table(b.build());
  EXPECT_NE(table.find("a\\nb\\tc"), std::string::npos) << table;
  EXPECT_EQ(table.find("a\nb"), std::string::npos);
  EXPECT_NE(table.find("worst a\\nb\\tc [VANISHING]"), std::string::npos);
}

// Names are data: a terminal must not act on what they hold (issue 10, item 4).
TEST(Render, TableShowsTerminalControlsInNamesAndEvidenceEscaped) {
  const std::string name = "esc\x1b]0;title\x07 c1\xc2\x9b" "2J raw\x9b bidi\u202e del\x7f";
  const std::string shown = "esc\\x1b]0;title\\x07 c1\\u009b2J raw\\x9b bidi\\u202e del\\x7f";
  ReportBuilder b;
  b.add({0, name, Site::kParamGrad, summary(1e-9, 10)});
  b.add({0, "p", Site::kParamGrad, summary(0.5, 10)});
  b.add({0, "p/" + name, Site::kParamGrad, summary(1e-9, 10)});  // rolls up into p's evidence
  const std::string table = render_table(b.build());
  EXPECT_NE(table.find("\n" + shown + "  "), std::string::npos) << table;  // the row
  EXPECT_NE(table.find("\n  " + shown + " VANISHING"), std::string::npos) << table;  // its evidence
  EXPECT_NE(table.find(" in: " + shown + "\n"), std::string::npos) << table;
  EXPECT_NE(table.find("worst " + shown + " [VANISHING]"), std::string::npos) << table;
  for (const char* raw : {"\x1b", "\x07", "\x7f", "\x9b", "\u202e"})
    EXPECT_EQ(table.find(raw), std::string::npos) << "raw " << raw << " in\n" << table;
}

// A name that a spreadsheet would run as a formula is written as text (issue 10, item 5).
TEST(Render, CsvNeutralisesFormulaNamesButNotNumbers) {
  ReportBuilder b;
  for (const char* name : {"=HYPERLINK(\"http://x\",\"y\")", "+1", "-2", "@SUM(A1)", "fc=1"})
    b.add({0, name, Site::kParamGrad, summary(0.5, 10)});
  const std::string csv = render_csv(b.build());
  EXPECT_NE(csv.find("\n\"'=HYPERLINK(\"\"http://x\"\",\"\"y\"\")\",1,0,0,,,,0.5,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n\"'+1\",1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n\"'-2\",1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\n\"'@SUM(A1)\",1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nfc=1,1,"), std::string::npos) << csv;
  EXPECT_EQ(csv_number(-0.5), "-0.5");  // numbers keep their sign
}

TEST(Render, MeasuresFormat) {
  EXPECT_EQ(format_measure(std::nan("")), "-");
  EXPECT_EQ(format_measure(0), "0");
  EXPECT_EQ(format_measure(0.5), "0.5");
  EXPECT_EQ(format_measure(1234.5), "1.23e+03");
  EXPECT_EQ(format_measure(12345.0), "1.23e+04");
  EXPECT_EQ(format_measure(3e-10), "3.00e-10");
  EXPECT_EQ(format_measure(-INFINITY), "-inf");
}

TEST(Render, VerdictNamesTheWorstNode) {
  EXPECT_EQ(render_verdict(sample_report()),
            "verdict: unhealthy: 5 of 6 nodes flagged over 3 steps; worst out [NAN] since step 2");
  // mixer/proj is mixer's submodule: its VANISHING is mixer's (roll-up), counted once there.
  std::vector<std::string> counted;
  const Report sample = sample_report();
  for (const NodeReport* n : sample.verdict_nodes()) counted.push_back(n->node);
  EXPECT_EQ(std::count(counted.begin(), counted.end(), "mixer/proj"), 0);
  EXPECT_EQ(counted.size(), 6u);
}

// A healthy model whose loss scaler skipped its first steps: healthy, the skips said; the same
// skips persisting at the end: unhealthy for that alone.
Report loss_scaled_report(std::initializer_list<int> skipped, int steps) {
  ReportBuilder b;
  for (int step = 0; step < steps; ++step) b.add({step, "fc", Site::kParamGrad, summary(0.5, 64)});
  Report r = b.build();
  double scale = 65536;
  for (int step = 0; step < steps; ++step) {
    const bool skip = std::find(skipped.begin(), skipped.end(), step) != skipped.end();
    add_loss_scale_step(r.loss_scale, step, scale, skip);
    if (skip) scale /= 2;
  }
  judge_loss_scale(r.loss_scale);
  return r;
}

TEST(Render, LossScaleSkipsAreSaidInTheTableTheVerdictAndTheJson) {
  const Report calibrating = loss_scaled_report({0, 1, 2}, 10);
  EXPECT_EQ(render_verdict(calibrating), "verdict: healthy (1 node, 10 steps; 3 steps skipped on loss-scale overflow)");
  const std::string table = render_table(calibrating);
  EXPECT_NE(table.find("\nLOSS_SCALE_OVERFLOW informational: 3 steps of 10 skipped on overflow (steps 0-2)"),
            std::string::npos)
      << table;
  const auto json = nlohmann::json::parse(render_json(calibrating));
  const auto& ls = json["gradscope_report"]["loss_scale"];
  EXPECT_EQ(ls["verdict"], "info");
  EXPECT_EQ(ls["skipped"], 3);
  EXPECT_EQ(ls["first_fit"], 3);
  EXPECT_EQ(ls["last_scale"], 8192.0);
  EXPECT_TRUE(json["gradscope_report"]["healthy"].get<bool>());

  const Report persisting = loss_scaled_report({5, 6, 7, 8, 9}, 10);
  EXPECT_EQ(render_verdict(persisting),
            "verdict: unhealthy: LOSS_SCALE_OVERFLOW: 5 steps of 10 skipped on overflow, loss scale 4096");
  EXPECT_FALSE(nlohmann::json::parse(render_json(persisting))["gradscope_report"]["healthy"].get<bool>());
  // Without a loss scale the key is null.
  EXPECT_TRUE(nlohmann::json::parse(render_json(sample_report()))["gradscope_report"]["loss_scale"].is_null());
}

// Every threshold of the one table is in report.json, by its name and with its value, and
// nothing else: the JSON loops over the table, so a threshold added there cannot be missing.
TEST(RenderJson, ReportJsonHoldsEveryThresholdOfTheTable) {
  Thresholds t;
  t.grad_hi = 123.5;
  t.stagnant_steps = 17;
  const nlohmann::ordered_json doc = nlohmann::ordered_json::parse(render_json(build_report({}, t)));
  const nlohmann::ordered_json& json = doc.at("gradscope_report").at("thresholds");
  std::vector<std::string> keys, names;
  for (const auto& [key, value] : json.items()) keys.push_back(key);
  for (const ThresholdField<Thresholds>& f : threshold_fields()) {
    names.push_back(f.name);
    ASSERT_TRUE(json.contains(f.name)) << f.name;
    EXPECT_EQ(json.at(f.name).get<double>(), f.get(t)) << f.name;
    EXPECT_EQ(json.at(f.name).is_number_integer(), f.is_integer()) << f.name;
  }
  std::sort(keys.begin(), keys.end());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(keys, names);
  EXPECT_EQ(json.at("grad_hi"), 123.5);
  EXPECT_EQ(json.at("stagnant_steps"), 17);
  EXPECT_GE(names.size(), 22u);
}

}  // namespace
}  // namespace gradscope
