#include "demo_compress.h"

#include <cstdio>

#include "compression_eval.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/torch/compress/apply_recipe.h"
#include "gradscope/torch/compress/packed.h"
#include "html_report.h"
#include "report_text.h"
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
  // Recipes from the saved run, as `gradscope compress` makes them, at the size of each uniform
  // precision: every method measured at the same bytes.
  const std::vector<compress::NodeProfile> saved = load_run_compress_profile(dir.string());
  const int64_t fp32 = compress::fp32_recipe(saved).bytes;
  compress::MeasuredComparison c;
  c.model = "healthy digits MLP (64-64-32-10), held-out digits";
  c.fp32_accuracy = trained.accuracy;
  c.fp32_bytes = fp32;
  std::printf("\n== compression: the healthy MLP (%lld bytes in FP32) at the size of each uniform precision; the recipe "
              "from its saved run's dynamics\n",
              static_cast<long long>(fp32));
  std::printf("\n   %-10s %-18s %8s %8s %9s\n", "size of", "method", "bytes", "of FP32", "accuracy");
  std::printf("   %-10s %-18s %8lld %7.1f%% %9.3f\n", "fp32", "fp32", static_cast<long long>(fp32), 100.0, trained.accuracy);
  compress::Recipe shipped;  // the recipe at INT4's size: written and packed below
  std::string line;
  for (compress::Precision p : {compress::Precision::kInt8, compress::Precision::kInt4, compress::Precision::kInt3,
                                compress::Precision::kInt2}) {
    const compress::Recipe uniform = compress::uniform_recipe(saved, p);
    std::vector<std::pair<std::string, compress::Recipe>> methods = {{std::string("uniform ") + compress::precision_name(p), uniform}};
    if (uniform.bytes >= compress::smallest_bytes(saved))
      methods.emplace_back("recipe", compress::make_recipe(saved, compress::Budget::bytes(uniform.bytes)));
    try {
      methods.emplace_back("magnitude + int8", compress::magnitude_recipe(saved, compress::Precision::kInt8, uniform.bytes));
    } catch (const Error&) {
      // its bitmap and scales alone do not fit at this size
    }
    for (const auto& [label, r] : methods) {
      const scenarios::Measured m = scenarios::measure(trained, r, data, compress::precision_name(p));
      c.points.push_back({r.method, compress::precision_name(p), m.bytes, m.accuracy});
      std::printf("   %-10s %-18s %8lld %7.1f%% %9.3f\n", &label == &methods.front().first ? compress::precision_name(p) : "",
                  label.c_str(), static_cast<long long>(m.bytes), 100.0 * m.bytes / fp32, m.accuracy);
      if (p == compress::Precision::kInt4 && label != "magnitude + int8") {
        char b[96];
        std::snprintf(b, sizeof b, "%s%s %lld B %.3f", line.empty() ? "" : ", ", label.c_str(),
                      static_cast<long long>(m.bytes), m.accuracy);
        line += b;
      }
      if (p == compress::Precision::kInt4 && label == "recipe") shipped = r;
    }
  }
  std::printf("   (bytes as stored, computed from what each method kept; accuracy on the %lld held-out images)\n",
              static_cast<long long>(data.x_test.size(0)));
  // The recipe at INT4's size, shipped: its JSON, the packed file, and the model loaded back
  // from that file and measured again.
  write_text_file((dir / "recipe.json").string(), render_recipe_json(shipped));
  std::printf("\n   the recipe at int4's size (%lld bytes), from the run's dynamics:\n", static_cast<long long>(shipped.bytes));
  for (const compress::NodeDecision& d : shipped.nodes)
    std::printf("   %-5s %s\n         because: %s\n", d.node.c_str(), d.action.c_str(), d.premise.c_str());
  const std::string packed = (dir / "model.gsq.safetensors").string();
  const PackedFileSize size = compress::save(*trained.model->audit_root(), shipped, packed);
  const double loaded_accuracy = scenarios::accuracy_loaded(trained, packed, data);
  std::printf("   packed: %s, %lld bytes on disk (%lld of weights as the recipe counts them, %lld of header);\n"
              "   loaded back into the model: accuracy %.3f\n",
              packed.c_str(), static_cast<long long>(size.file_bytes), static_cast<long long>(size.data_bytes),
              static_cast<long long>(size.header_bytes), loaded_accuracy);
  std::printf("   (try `gradscope compress %s --budget-bytes %lld -o recipe.json`)\n", dir.string().c_str(),
              static_cast<long long>(shipped.budget_bytes));
  char b[96];
  std::snprintf(b, sizeof b, ", packed file %lld B loaded %.3f", static_cast<long long>(size.file_bytes), loaded_accuracy);
  line += b;
  save_measured_comparison(dir.string(), c);
  const LoadedRun loaded = load_run(dir.string(), false, {}, /*series=*/true);
  // The reports every demo run has (README), of the healthy model the recipe compresses.
  write_run_reports(dir.string());
  pages.push_back(dir / "report.html");
  write_html_report(loaded, pages.back().string());
  char head[64];
  std::snprintf(head, sizeof head, "  %-24s ", "compress-mlp");
  return head + line;
}

}  // namespace gradscope::cli
