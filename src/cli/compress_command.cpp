// gradscope compress RUN --budget-bytes N | --max-loss X [-o recipe.json]: a compression
// recipe from a saved run's dynamics (run.db: its records and its units.json document), by the rule in
// include/gradscope/core/compress/rule.h. Reads the run without LibTorch; prints a table of the
// decisions and writes the recipe JSON (to stdout when -o is not given). --max-loss bounds the
// rule's predicted loss: the CLI has no model to measure (the measured bound is
// gradscope::compress::search_max_loss, in C++). --table NAME=BYTES (repeatable) writes row
// recipes for embedding tables instead, from the run's rows.json document in run.db
// (core/compress/rows.h).
// --weights W --packed OUT applies the recipe (or the --table row recipes) to the model's weights
// (a safetensors file, e.g. from gradscope.compress.save_weights) and writes the packed model
// (io/compress/packed_file.h), still without LibTorch.
#include <algorithm>
#include <cstdio>
#include <map>
#include <iostream>
#include <limits>

#include "commands.h"
#include "option_checks.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/core/compress/rows.h"
#include "gradscope/core/compress/packed.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/compress/packed_file.h"
#include "gradscope/io/compress/rows_json.h"
#include "gradscope/io/render/safe_text.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

struct CompressOptions {
  std::string run, out;
  std::string weights, packed;  ///< --weights FILE --packed OUT: the recipe applied and written
  int64_t budget_bytes = 0;
  double max_loss = 0;
  std::vector<std::string> tables;  ///< NAME=BYTES
  bool json = false;                ///< recipe JSON on stdout also with -o
};

// NAME=BYTES, BYTES a positive integer; the name may itself hold '='.
std::pair<std::string, int64_t> table_budget(const std::string& arg) {
  const std::size_t eq = arg.rfind('=');
  std::size_t used = 0;
  long long bytes = 0;
  try {
    if (eq != std::string::npos && eq > 0) bytes = std::stoll(arg.substr(eq + 1), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (eq == std::string::npos || eq == 0 || used == 0 || used != arg.size() - eq - 1 || bytes < 1)
    throw UsageError("compress: --table takes NAME=BYTES (bytes a positive integer), got '" + arg + "'");
  return {arg.substr(0, eq), bytes};
}

// The --weights file, read as any safetensors file is (read_packed); its errors call it the
// weights file, not a packed model ("the weights file 'w.safetensors' (--weights): no such file").
compress::PackedModel read_weights(const std::string& path) {
  try {
    return read_packed(path);
  } catch (const Error& e) {
    const std::string said = e.what(), packed = "packed model '" + path + "'";
    throw Error("the weights file '" + path + "' (--weights)" +
                (said.rfind(packed, 0) == 0 ? said.substr(packed.size()) : ": " + said));
  }
}

// The recipe (and the tables' row recipes) applied to the weights file, written packed; one line
// says where and how large. A table NAME is the weights file's entry NAME or NAME.weight.
void write_packed_model(const CompressOptions& opt, const compress::Recipe& recipe,
                        const std::vector<compress::RowRecipe>& tables) {
  const compress::PackedModel weights = read_weights(opt.weights);
  if (!weights.nodes.empty() || !weights.tables.empty())
    throw Error("--weights '" + opt.weights + "' is already a packed model (" +
                std::to_string(weights.nodes.size() + weights.tables.size()) +
                " compressed nodes and tables); give the model's uncompressed weights (gradscope.compress.save_weights)");
  std::vector<compress::StateEntry> state;
  for (const compress::StoredTensor& t : weights.tensors) state.push_back({t.name, t.dtype, t.shape, t.data.data()});
  std::map<std::string, compress::RowRecipe> rows;
  for (const compress::RowRecipe& r : tables) {
    const auto has = [&](const std::string& name) {
      return std::any_of(state.begin(), state.end(), [&](const compress::StateEntry& e) { return e.name == name; });
    };
    const std::string entry = has(r.table) ? r.table : r.table + ".weight";
    if (!has(entry))
      throw Error("--weights '" + opt.weights + "' holds no entry '" + r.table + "' or '" + r.table + ".weight' for table '" +
                  r.table + "'");
    rows[entry] = r;
  }
  compress::PackedModel packed;
  try {
    packed = compress::pack(recipe, state, {}, {}, rows);
  } catch (const Error& e) {
    throw Error("--weights '" + opt.weights + "': " + e.what());
  }
  const PackedFileSize size = write_packed(opt.packed, packed);
  std::fprintf(opt.json || opt.out.empty() ? stderr : stdout,
               "packed model written to %s: %lld bytes on disk (%lld of compressed nodes and tables, %lld of other "
               "state, %lld of header); the weights file was %lld bytes\n",
               terminal_text(opt.packed).c_str(), static_cast<long long>(size.file_bytes),
               static_cast<long long>(packed.node_bytes + packed.table_bytes), static_cast<long long>(packed.other_bytes),
               static_cast<long long>(size.header_bytes), static_cast<long long>(weights.data_bytes()));
}

int run_compress_tables(const CompressOptions& opt) {
  const std::vector<compress::RowProfile> tables = load_run_row_profiles(opt.run);
  std::vector<compress::RowRecipe> recipes;
  for (const std::string& arg : opt.tables) {
    const auto [name, bytes] = table_budget(arg);
    for (const compress::RowRecipe& r : recipes)
      if (r.table == name) throw UsageError("compress: --table names '" + name + "' twice (a table gets one budget)");
    const compress::RowProfile* found = nullptr;
    std::string names;
    for (const compress::RowProfile& t : tables) {
      if (t.table == name) found = &t;
      names += (names.empty() ? "'" : ", '") + t.table + "'";
    }
    if (!found) throw Error("run '" + opt.run + "': no embedding table '" + name + "' in rows.json (its tables: " + names + ")");
    recipes.push_back(compress::make_row_recipe(*found, bytes));
  }
  const std::string json = render_row_recipes_json(recipes);
  if (opt.out.empty() || opt.json) std::cout << json;
  if (!opt.packed.empty()) write_packed_model(opt, compress::Recipe{}, recipes);  // the tables only
  if (opt.out.empty()) return kExitOk;
  write_text_file(opt.out, json);
  if (opt.json) return kExitOk;
  for (const compress::RowRecipe& r : recipes)
    std::printf("table %s: %lld of %lld bytes (%.1f%% of FP32): %s\n      because: %s\n", terminal_text(r.table).c_str(),
                static_cast<long long>(r.bytes), static_cast<long long>(r.fp32_bytes), 100.0 * r.bytes / r.fp32_bytes,
                terminal_text(r.action).c_str(), terminal_text(r.premise).c_str());
  std::printf("written to %s\n", terminal_text(opt.out).c_str());
  return kExitOk;
}

int run_compress(const CompressOptions& opt, bool by_bytes) {
  const std::vector<compress::NodeProfile> nodes = load_run_compress_profile(opt.run);
  const compress::Recipe recipe =
      compress::make_recipe(nodes, by_bytes ? compress::Budget::bytes(opt.budget_bytes) : compress::Budget::loss(opt.max_loss));
  const std::string json = render_recipe_json(recipe);
  if (opt.out.empty() || opt.json) std::cout << json;
  if (!opt.packed.empty()) write_packed_model(opt, recipe, {});
  if (opt.out.empty()) return kExitOk;
  write_text_file(opt.out, json);
  if (opt.json) return kExitOk;
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
  cmd->add_option("RUN", opt->run,
                  "run directory (or its run.db) holding the units.json document (the rows.json document for "
                  "--table); the documents live in run.db")
      ->required();
  CLI::Option* bytes = cmd->add_option("--budget-bytes", opt->budget_bytes, "largest size of the model as stored, in bytes")
                           ->transform(whole_number("a byte count", 1, "BYTES"));
  CLI::Option* loss =
      cmd->add_option("--max-loss", opt->max_loss,
                      "largest PREDICTED increase of the training loss, in nats (second-order estimate; not measured: "
                      "the CLI has no model, see gradscope::compress::search_max_loss for a measured bound)")
          ->check(number_in(0.0, 1e300));
  bytes->excludes(loss);
  CLI::Option* table = cmd->add_option("--table", opt->tables,
                                       "NAME=BYTES: a row recipe for embedding table NAME within BYTES, from the run's "
                                       "rows.json document in run.db (repeatable; instead of --budget-bytes / "
                                       "--max-loss)");
  table->excludes(bytes);
  table->excludes(loss);
  cmd->add_option("-o,--out", opt->out, "recipe JSON file (default: stdout)");
  CLI::Option* weights = cmd->add_option(
      "--weights", opt->weights,
      "the model's weights as safetensors (gradscope.compress.save_weights, gradscope::compress::save_weights): with "
      "--packed, the recipe is applied to them");
  CLI::Option* packed = cmd->add_option(
      "--packed", opt->packed, "write the model packed under the recipe to this file (safetensors layout; "
                               "gradscope.compress.load and gradscope::compress::load read it)");
  weights->needs(packed);
  packed->needs(weights);
  cmd->add_flag("--json", opt->json,
                "the recipe as JSON on stdout (the default without -o; with -o, instead of the summary lines)");
  cmd->callback([opt, bytes, loss, table, &exit_code] {
    if (table->count() > 0) {
      exit_code = run_compress_tables(*opt);
      return;
    }
    if (bytes->count() == 0 && loss->count() == 0)
      throw UsageError("compress: give --budget-bytes N or --max-loss X (or --table NAME=BYTES)");
    exit_code = run_compress(*opt, bytes->count() > 0);
  });
}

}  // namespace gradscope::cli
