// What the audit saved with a run beside its records (schema 3: architecture and warnings)
// reaches `gradscope report --json` and `gradscope html`, and a run without them shows none.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "gradscope/core/audit/run_sink.h"
#include "gradscope/io/store/run_writer.h"
#include "run_cli.h"

namespace {

namespace fs = std::filesystem;
using gradscope::test::fresh_dir;
using gradscope::test::run_cli;
using gradscope::test::slurp;
using ::testing::HasSubstr;
using ::testing::Not;

gradscope::Stats grad(double v) {  // 4 elements of value v: healthy for v around 0.1-1
  gradscope::Stats s;
  s.count = s.finite = 4;
  s.sum = s.sum_abs = 4 * v;
  s.sum_sq = 4 * v * v;
  s.min = s.max = s.max_abs = v;
  return s;
}

// fc1 and head recorded for 5 steps; the summary names a third node that never ran.
fs::path make_run(const fs::path& dir, bool with_summary) {
  gradscope::RunWriter w(dir.string());
  for (int step = 0; step < 5; ++step) {
    w.add({step, "fc1", gradscope::Site::kParamGrad, grad(0.5)});
    w.add({step, "head", gradscope::Site::kParamGrad, grad(0.25)});
  }
  if (with_summary) {
    gradscope::RunSummary s;
    s.architecture.nodes = {{"fc1", "torch::nn::LinearImpl", 0, 4160, 4160},
                            {"head", "torch::nn::LinearImpl", 1, 650, 650},
                            {"unused<b>", "torch::nn::LinearImpl", -1, 10, 0}};
    s.warnings = {"scope of \"fc1\" truncated at depth 2 <i>"};
    w.set_summary(s);
  }
  w.close();
  return dir;
}

TEST(SavedModel, ReportJsonHoldsTheArchitectureAndTheWarnings) {
  const fs::path dir = fresh_dir("saved-model-json");
  const fs::path r = make_run(dir / "r", true);
  const auto res = run_cli("report --json " + r.string());
  ASSERT_EQ(res.code, 1) << res.err;  // the node that never ran is NO_DATA: unhealthy
  const nlohmann::json doc = nlohmann::json::parse(res.out);
  const nlohmann::json& nodes = doc.at("architecture").at("nodes");
  ASSERT_EQ(nodes.size(), 3u);
  EXPECT_EQ(nodes[0].at("id"), "fc1");
  EXPECT_EQ(nodes[0].at("parameters"), 4160);
  EXPECT_EQ(nodes[1].at("order"), 1);
  EXPECT_EQ(nodes[2].at("id"), "unused<b>");
  EXPECT_EQ(nodes[2].at("trainable"), 0);
  EXPECT_EQ(doc.at("warnings"), nlohmann::json::array({"scope of \"fc1\" truncated at depth 2 <i>"}));
  fs::remove_all(dir);
}

TEST(SavedModel, RunWithoutASummaryHasNoArchitectureAndNoWarnings) {
  const fs::path dir = fresh_dir("saved-model-none");
  const fs::path r = make_run(dir / "r", false);
  const auto res = run_cli("report --json " + r.string());
  ASSERT_EQ(res.code, 0) << res.err;
  const nlohmann::json doc = nlohmann::json::parse(res.out);
  EXPECT_FALSE(doc.contains("architecture"));
  EXPECT_EQ(doc.at("warnings"), nlohmann::json::array());
  const fs::path page = dir / "page.html";
  ASSERT_EQ(run_cli("html " + r.string() + " -o " + page.string()).code, 0);
  EXPECT_THAT(slurp(page), Not(HasSubstr("<section id=\"model\">")));
  fs::remove_all(dir);
}

TEST(SavedModel, HtmlShowsTheArchitectureAndTheWarningsEscaped) {
  const fs::path dir = fresh_dir("saved-model-html");
  const fs::path r = make_run(dir / "r", true);
  const fs::path page = dir / "page.html";
  const auto res = run_cli("html " + r.string() + " -o " + page.string());
  ASSERT_EQ(res.code, 0) << res.err;
  const std::string html = slurp(page);
  EXPECT_THAT(html, HasSubstr("<section id=\"model\"><h2>Model</h2>"));
  EXPECT_THAT(html, HasSubstr("<li>scope of &quot;fc1&quot; truncated at depth 2 &lt;i&gt;</li>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>0</td><td class=\"mono\">fc1</td><td class=\"mono\">torch::nn::LinearImpl</td>"
                              "<td>4160</td><td>4160</td></tr>"));
  EXPECT_THAT(html, HasSubstr("<tr><td>never ran</td><td class=\"mono\">unused&lt;b&gt;</td>"));
  EXPECT_THAT(html, Not(HasSubstr("unused<b>")));
  fs::remove_all(dir);
}

}  // namespace
