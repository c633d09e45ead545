// gradscope compress RUN --budget-bytes N | --max-loss X [-o recipe.json]: a compression
// recipe from a saved run's dynamics (run.db and units.json), by the rule in
// include/gradscope/core/compress_rule.h. Reads the run without LibTorch; prints a table of the
// decisions and writes the recipe JSON (to stdout when -o is not given).
#include <cstdio>
#include <iostream>
#include <limits>

#include "commands.h"
#include "gradscope/core/compress_rule.h"
#include "gradscope/io/compress_json.h"
#include "gradscope/io/safe_text.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

struct CompressOptions {
  std::string run, out;
  int64_t budget_bytes = 0;
  double max_loss = 0;
};

int run_compress(const CompressOptions& opt, bool by_bytes) {
  const std::vector<compress::NodeProfile> nodes = load_run_compress_profile(opt.run);
  const compress::Recipe recipe =
      compress::make_recipe(nodes, by_bytes ? compress::Budget::bytes(opt.budget_bytes) : compress::Budget::loss(opt.max_loss));
  const std::string json = render_recipe_json(recipe);
  if (opt.out.empty()) {
    std::cout << json;
    return kExitOk;
  }
  write_text_file(opt.out, json);
  std::printf("recipe for %s: %lld of %lld bytes (%.1f%% of FP32), predicted loss increase %.3g nats\n",
              terminal_text(opt.run).c_str(), static_cast<long long>(recipe.bytes),
              static_cast<long long>(recipe.fp32_bytes), 100.0 * recipe.bytes / recipe.fp32_bytes, recipe.predicted_loss);
  for (const compress::NodeDecision& d : recipe.nodes)
    std::printf("  %-12s %s\n      because: %s\n      effect: %s\n", terminal_text(d.node).c_str(),
                terminal_text(d.action).c_str(), terminal_text(d.premise).c_str(),
                terminal_text(d.expected_effect).c_str());
  std::printf("written to %s\n", terminal_text(opt.out).c_str());
  return kExitOk;
}

}  // namespace

void add_compress_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<CompressOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compress", "Write a compression recipe (precision and pruned units per node) from a saved run's dynamics");
  cmd->add_option("RUN", opt->run, "run directory with run.db and units.json")->required();
  CLI::Option* bytes = cmd->add_option("--budget-bytes", opt->budget_bytes, "largest size of the model as stored, in bytes")
                           ->check(CLI::Range(int64_t{1}, std::numeric_limits<int64_t>::max()));
  CLI::Option* loss =
      cmd->add_option("--max-loss", opt->max_loss,
                      "largest predicted increase of the training loss, in nats (second-order estimate)")
          ->check(CLI::Range(0.0, 1e300));
  bytes->excludes(loss);
  cmd->add_option("-o,--out", opt->out, "recipe JSON file (default: stdout)");
  cmd->callback([opt, bytes, loss, &exit_code] {
    if (bytes->count() == 0 && loss->count() == 0) throw UsageError("compress: give --budget-bytes N or --max-loss X");
    exit_code = run_compress(*opt, bytes->count() > 0);
  });
}

}  // namespace gradscope::cli
