#include "demo_compress.h"

#include <cstdio>

#include "compression_eval.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/render/json.h"
#include "gradscope/io/render/table.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/torch/compress/apply_recipe.h"
#include "html_report.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace fs = std::filesystem;

std::string run_compression_demo(const Digits& data, const std::string& out_dir, int steps, uint64_t seed,
                                 std::vector<fs::path>& pages) {
  const std::string name = "demo-compress-mlp";
  const fs::path dir = fs::path(out_dir) / name;
  RunWriterOptions store;
  store.name = name;
  store.command_line = command_line();
  store.overwrite = true;
  scenarios::CompressionTask task = scenarios::digits_mlp_task();
  task.steps = steps;
  scenarios::Trained trained;
  {
    RunWriter run(dir.string(), store);
    trained = scenarios::train_for_compression(task, data, seed, &run);
    run.close();
  }
  save_compress_profile(dir.string(), trained.profiles);
  // The recipe from the saved run, as `gradscope compress` makes it.
  const std::vector<compress::NodeProfile> saved = load_run_compress_profile(dir.string());
  const int64_t fp32 = compress::fp32_recipe(saved).bytes;
  const compress::Recipe recipe = compress::make_recipe(saved, compress::Budget::bytes(fp32 / 4));
  write_text_file((dir / "recipe.json").string(), render_recipe_json(recipe));

  compress::MeasuredComparison c;
  c.model = "healthy digits MLP (64-64-32-10), held-out digits";
  c.fp32_accuracy = trained.accuracy;
  c.fp32_bytes = fp32;
  std::printf("\n== compression: the healthy MLP's recipe at a quarter of its FP32 size (%lld of %lld bytes), "
              "from its saved run's dynamics\n",
              static_cast<long long>(fp32 / 4), static_cast<long long>(fp32));
  for (const compress::NodeDecision& d : recipe.nodes)
    std::printf("   %-5s %s\n         because: %s\n", d.node.c_str(), d.action.c_str(), d.premise.c_str());
  std::printf("\n   %-22s %10s %9s %9s\n", "model", "bytes", "of FP32", "accuracy");
  std::printf("   %-22s %10lld %8.1f%% %9.3f\n", "fp32", static_cast<long long>(fp32), 100.0, trained.accuracy);
  std::string line;
  for (const auto& [label, r] : {std::pair<std::string, compress::Recipe>{"recipe (quarter)", recipe},
                                 {"uniform int8", compress::uniform_recipe(saved, compress::Precision::kInt8)},
                                 {"uniform int4", compress::uniform_recipe(saved, compress::Precision::kInt4)}}) {
    const scenarios::Measured m = scenarios::measure(trained, r, data, label);
    c.points.push_back({r.method, label, m.bytes, m.accuracy});
    std::printf("   %-22s %10lld %8.1f%% %9.3f\n", label.c_str(), static_cast<long long>(m.bytes), 100.0 * m.bytes / fp32,
                m.accuracy);
    char b[96];
    std::snprintf(b, sizeof b, "%s%s %lld B %.3f", line.empty() ? "" : ", ", label.c_str(),
                  static_cast<long long>(m.bytes), m.accuracy);
    line += b;
  }
  std::printf("   (bytes as stored, computed by gradscope::compress::apply from what it kept; accuracy on the %lld "
              "held-out images; try `gradscope compress %s --budget-bytes %lld -o recipe.json`)\n",
              static_cast<long long>(data.x_test.size(0)), dir.string().c_str(), static_cast<long long>(fp32 / 4));
  save_measured_comparison(dir.string(), c);
  const LoadedRun loaded = load_run(dir.string(), false, {}, /*series=*/true);
  // The reports every demo run has (README), of the healthy model the recipe compresses.
  write_text_file((dir / "report.txt").string(), render_table(loaded.report));
  write_text_file((dir / "report.json").string(), render_json(loaded.report));
  pages.push_back(dir / "report.html");
  write_html_report(loaded, pages.back().string());
  char head[64];
  std::snprintf(head, sizeof head, "  %-24s ", "compress-mlp");
  return head + line;
}

}  // namespace gradscope::cli
