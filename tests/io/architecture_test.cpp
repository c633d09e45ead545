// Architecture JSON and Mermaid: golden files from a fixed snapshot and report, and escaping.
#include "gradscope/io/render/architecture.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gradscope/core/audit/rules.h"
#include "golden_util.h"
#include "../common/stats_fixture.h"

namespace gradscope {
namespace {

Stats summary(double l2, int64_t count) { return test::with_l2(l2, count); }

Architecture sample_architecture() {
  Architecture a;
  a.nodes = {{"embed", "torch::nn::EmbeddingImpl", 0, 6400, 6400},
             {"encoder", "EncoderImpl", 1, 2080, 2080},
             {"encoder/backbone.0", "BlockImpl", 2, 1040, 1040},
             {"encoder/backbone.1", "BlockImpl", 3, 1040, 1040},
             {"head", "torch::nn::LinearImpl", 4, 330, 0},
             {"unused", "torch::nn::LinearImpl", -1, 20, 20}};
  return a;
}

Report sample_report() {
  ReportBuilder b;
  for (const auto& n : sample_architecture().nodes) b.declare(n.id);
  b.add({0, "embed", Site::kParamGrad, summary(0.5, 6400)});
  b.add({0, "encoder", Site::kParamGrad, summary(0.2, 2080)});
  b.add({0, "encoder/backbone.0", Site::kParamGrad, summary(1e-9, 1040)});
  b.add({0, "encoder/backbone.1", Site::kParamGrad, summary(0.2, 1040)});
  b.add({0, "head", Site::kFrozenParam, summary(3, 330)});
  b.add({0, "head", Site::kActivation, summary(1, 10)});
  return b.build();
}

TEST(Architecture, JsonGolden) {
  test::expect_golden("architecture.json", render_architecture_json(sample_architecture()));
  const auto doc = nlohmann::json::parse(render_architecture_json(sample_architecture()));
  EXPECT_EQ(doc["architecture"]["nodes"][2]["parent"], "encoder");
  EXPECT_TRUE(doc["architecture"]["nodes"][5]["order"].is_null());
}

TEST(Architecture, MermaidGolden) {
  test::expect_golden("architecture.mmd", render_mermaid(sample_architecture(), sample_report()));
}

TEST(Architecture, MermaidLabelsCannotBreakOut) {
  Architecture a;
  a.nodes = {{"a\"]; click x \"<b>", "T", 0, 1, 1}};
  ReportBuilder b;
  b.add({0, a.nodes[0].id, Site::kParamGrad, summary(1, 1)});
  const std::string m = render_mermaid(a, b.build());
  EXPECT_NE(m.find("a#quot;]; click x #quot;#lt;b#gt;"), std::string::npos) << m;
  EXPECT_EQ(m.find("\"<b>"), std::string::npos);
}

// Mermaid fails to parse an empty label (`n0[""]`); an empty name is shown as "" instead.
TEST(Architecture, MermaidShowsAnEmptyNameVisibly) {
  Architecture a;
  a.nodes = {{"", "T", 0, 1, 1}, {"head", "T", 1, 1, 1}};
  const std::string m = render_mermaid(a, Report{});
  EXPECT_NE(m.find("\n  n0[\"#quot;#quot;\"]:::healthy\n"), std::string::npos) << m;
  EXPECT_EQ(m.find("[\"\"]"), std::string::npos) << m;
  EXPECT_NE(m.find("\n  n0 --> n1\n"), std::string::npos) << m;
}

// A node whose path parent is not a node is drawn at the top level under its whole id, and a
// grandchild inside its parent's subgraph; none vanishes from the chart.
TEST(Architecture, MermaidDrawsEveryNodeWhateverItsPath) {
  Architecture a;
  a.nodes = {{"enc", "T", 0, 1, 1},
             {"enc/block", "T", 1, 1, 1},
             {"enc/block/fc", "T", 2, 1, 1},
             {"enc/missing/fc", "T", 3, 1, 1},
             {"orphan/fc", "T", 4, 1, 1},
             {"a\x1b[2J", "T", 5, 1, 1}};
  EXPECT_EQ(render_mermaid(a, Report{}),
            "flowchart LR\n"
            "  subgraph n0_group[\"enc\"]\n"
            "    n0[\"enc\"]:::healthy\n"
            "    subgraph n1_group[\"block\"]\n"
            "      n1[\"block\"]:::healthy\n"
            "      n2[\"fc\"]:::healthy\n"
            "    end\n"
            "    n3[\"missing/fc\"]:::healthy\n"
            "  end\n"
            "  n4[\"orphan/fc\"]:::healthy\n"
            "  n5[\"a\\x1b[2J\"]:::healthy\n"
            "  n0 --> n4\n"
            "  n4 --> n5\n"
            "  classDef healthy fill:#e8f5e9,stroke:#2e7d32\n"
            "  classDef flagged fill:#ffebee,stroke:#c62828\n"
            "  classDef idle fill:#eeeeee,stroke:#9e9e9e,stroke-dasharray: 4 2\n");
}

}  // namespace
}  // namespace gradscope
