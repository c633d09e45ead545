// browser_hostile_run DIR: writes a run (records and an embedding table) whose names try to
// break out of every place an HTML report puts them (script, attribute, text, template), and
// prints those strings as a JSON array. The browser test renders the run and checks that each
// string shows as text and that nothing in them runs.
#include <cmath>
#include <cstdio>
#include <exception>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gradscope/core/embedding/profile.h"
#include "gradscope/core/embedding/report.h"
#include "gradscope/core/stats/stats.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/store/run_writer.h"

namespace {

const std::string kScript = "</script><img src=x onerror=alert(1)>";
const std::string kQuotes = "\"quotes' & <b>amp</b>";
// U+2028 ends a line inside JavaScript strings before ES2019, and in Vega expressions.
const std::string kLineSeparator = "line\u2028separator";
const std::string kTemplate = "{{x}}";
// Would set the global the test looks for, if an attribute or a <script> let it through.
const std::string kSetsGlobal = "<svg onload=\"window.__gradscope_xss=1\">";
const std::string kLayer = "embedding/" + kScript + kQuotes + kTemplate;  // an embedding table

gradscope::Stats grad_stats(const std::vector<float>& values) {
  const auto view = gradscope::TensorView::contiguous(values.data(), gradscope::DType::kFloat32,
                                                      {static_cast<int64_t>(values.size())});
  return gradscope::compute(view);
}

void write_run(const std::string& dir) {
  gradscope::RunWriterOptions options;
  options.name = kScript + " " + kQuotes + " " + kLineSeparator + " " + kTemplate;
  options.command_line = "train " + kSetsGlobal + " " + kQuotes;
  options.overwrite = true;
  gradscope::RunWriter run(dir, options);

  const std::vector<std::string> healthy = {"encoder/" + kScript, "encoder/" + kQuotes,
                                            kLineSeparator + "/" + kTemplate};
  const std::string dead = "head/" + kSetsGlobal;  // zero gradients: flagged
  std::vector<float> values(64);
  for (int64_t step = 0; step < 12; ++step) {
    for (std::size_t n = 0; n < healthy.size(); ++n) {
      for (std::size_t i = 0; i < values.size(); ++i)
        values[i] = 0.01f * std::sin(static_cast<float>(step * 7 + i * 3 + n));
      run.add({step, healthy[n], gradscope::Site::kParamGrad, grad_stats(values)});
    }
    run.add({step, dead, gradscope::Site::kParamGrad, grad_stats(std::vector<float>(64, 0.0f))});
    // Attention of a node with a hostile name: two heads, the second growing and collapsing
    // from step 4, so both attention charts draw and the findings name it.
    gradscope::HeadStats calm, sharp;
    calm.queries = calm.fraction_queries = sharp.queries = sharp.fraction_queries = 16;
    calm.max_logit = 3;
    calm.entropy_fraction_sum = 16 * 0.8;
    sharp.max_logit = step < 4 ? 4.0 : 300.0 * static_cast<double>(step);
    sharp.entropy_fraction_sum = 16 * (step < 4 ? 0.8 : 0.02);
    sharp.top_queries = step < 4 ? 0 : 15;
    run.add(gradscope::AttentionRecord{step, healthy[0], {calm, sharp}});
    run.end_step();
  }
  run.close();
}

// One embedding table with a hostile layer name: rows exposed unevenly, a quarter never (so
// it is diagnosed), updates that turn back and forth (so every histogram has data).
void write_embedding(const std::string& dir) {
  constexpr int64_t kRows = 40, kDim = 4, kSteps = 12;
  gradscope::EmbeddingRows rows(kRows, kDim);
  std::vector<float> grad(kDim), delta(kDim);
  for (int64_t step = 0; step < kSteps; ++step) {
    for (int64_t row = 0; row < kRows * 3 / 4; ++row) {
      if (step % (1 + row % 4) != 0) continue;
      rows.expose(row, step);
      for (int64_t i = 0; i < kDim; ++i) {
        grad[i] = 0.01f * std::cos(static_cast<float>(row + i + step));
        delta[i] = (step % 2 ? 1.0f : -1.0f) * 0.001f * static_cast<float>(1 + row % 5);
      }
      rows.record_gradient(row, grad.data());
      rows.record_update(row, delta.data(), 1.0);
    }
  }
  gradscope::EmbeddingRunSummary summary;
  summary.tables.push_back({gradscope::diagnose_embedding(kLayer, rows, kSteps, {}),
                            gradscope::profile_embedding(kLayer, rows)});
  summary.correlations.push_back({kLayer, kLineSeparator, 0.5, kSteps});
  gradscope::save_embedding_summary(dir, summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: browser_hostile_run DIR\n");
    return 2;
  }
  try {
    write_run(argv[1]);
    write_embedding(argv[1]);
    const auto strings =
        nlohmann::json::array({kScript, kQuotes, kLineSeparator, kTemplate, kSetsGlobal, kLayer});
    std::printf("%s\n", strings.dump().c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "browser_hostile_run: error: %s\n", e.what());
    return 3;
  }
  return 0;
}
