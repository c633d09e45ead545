// gradscope trees MODEL [--data CSV --label COL] [--valid CSV]: reads a boosted model
// (XGBoost JSON, LightGBM text or JSON, CatBoost JSON), measures every round over the rows,
// prints the round timeline and the findings, and writes the run (run.db, the analysis inside) so
// `gradscope html`, `report`, `ls` and `diff` work on it. Exit 1 when a finding fires.
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "gradscope/io/render/run_report.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/trees/text.h"
#include "gradscope/trees/data_files.h"
#include "gradscope/trees/read_model.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

struct TreesOptions {
  std::string model, data, label, valid, out;
  int window = 0;
  bool json = false, overwrite = false;
};

// The rows of `path` with the label column `label` ("" for none), checked against the model's
// features here so the message names the file.
TreeData read_rows(const std::string& path, const std::string& label, const TreeEnsemble& model) {
  TreeData d = read_csv_data(path, label);
  if (d.cols != static_cast<std::size_t>(model.num_features))
    throw Error("data file '" + path + "': " + std::to_string(d.cols) + " feature columns" +
                (label.empty() ? "" : " besides the label '" + label + "'") + ", the model has " +
                std::to_string(model.num_features) + " features");
  if (d.rows == 0) throw Error("data file '" + path + "': no rows after the header");
  // Labels the model's loss cannot take (2 for a binary logloss) named with their file here;
  // the analysis would say "data" only.
  check_tree_labels(model, tree_loss_of(model), d, "data file '" + path + "'");
  return d;
}

// gradscope-runs/<model file name without its extension>.
std::string default_run_dir(const std::string& model) {
  return (std::filesystem::path("gradscope-runs") /
          ("trees-" + std::filesystem::path(model).stem().string()))
      .string();
}

int run_trees(const TreesOptions& opt) {
  if (!opt.valid.empty() && opt.label.empty())
    throw UsageError("--valid needs --label: the validation loss compares predictions with labels");
  if (!opt.label.empty() && opt.data.empty() && opt.valid.empty())
    throw UsageError("--label names a column of --data or --valid; neither was given");
  const TreeEnsemble model = read_tree_model(opt.model);
  if (model.rounds == 0) throw Error("model '" + opt.model + "': no trees to analyse");
  std::optional<TreeData> data, valid;
  if (!opt.data.empty()) data = read_rows(opt.data, opt.label, model);
  if (!opt.valid.empty()) valid = read_rows(opt.valid, opt.label, model);
  TreeThresholds thresholds;
  thresholds.window = opt.window;
  TreeRunSummary summary{
      opt.model, opt.data, opt.valid, opt.label,
      analyze_tree_dynamics(model, {data ? &*data : nullptr, valid ? &*valid : nullptr},
                            thresholds)};
  const std::string dir = opt.out.empty() ? default_run_dir(opt.model) : opt.out;
  RunWriterOptions writer;
  writer.command_line = command_line();
  writer.overwrite = opt.overwrite;
  if (!opt.overwrite && std::filesystem::exists(std::filesystem::path(dir) / "run.db"))
    throw Error("run '" + dir +
                "' exists: pass --overwrite to replace it, or --out another folder");
  write_tree_run(dir, summary, writer);
  if (opt.json) {
    // The document `gradscope report RUN --json` prints of the run just written: the agent
    // schema every command shares (docs/agent-json.md), the analysis under "trees".
    const LoadedRun run = load_run(dir, false, {}, false, /*frames=*/false);
    std::cout << render_run_json(run.meta, run.report, run.flow, nullptr, &summary, &run.summary, &run.damage);
  } else {
    std::cout << render_tree_timeline(summary) << render_tree_findings(summary);
    std::cout << "\nrun written to " << terminal_text(dir) << " (gradscope html "
              << terminal_text(dir) << " draws its rounds)\n";
    std::cout << tree_run_verdict(summary) << "\n";
  }
  return summary.report.healthy() ? kExitOk : kExitUnhealthy;
}

}  // namespace

void add_trees_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<TreesOptions>();
  CLI::App* cmd = app.add_subcommand(
      "trees",
      "Judge a boosted model round by round (XGBoost JSON, LightGBM text/JSON, CatBoost JSON) and "
      "save it as a run (exit 1 when a finding fires)");
  cmd->add_option("MODEL", opt->model, "model file")->required();
  cmd->add_option("--data", opt->data,
                  "CSV with a header row: the rows to measure rounds on (training rows)");
  cmd->add_option("--label", opt->label,
                  "label column of --data and --valid (for the training and validation loss)");
  cmd->add_option("--valid", opt->valid, "CSV of validation rows, same columns (needs --label)");
  cmd->add_option("--window", opt->window, "rounds per window of the views (default: max(5, rounds / 20)); the rules always judge on the default windows")
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--out", opt->out,
                  "run folder to write (default: gradscope-runs/trees-<model name>)");
  cmd->add_flag("--overwrite", opt->overwrite, "replace the run in --out if there is one");
  cmd->add_flag("--json", opt->json,
                "print the run as `gradscope report RUN --json` does (the analysis under \"trees\", every "
                "finding in the agent schema) instead of text");
  cmd->callback([opt, &exit_code] { exit_code = run_trees(*opt); });
}

}  // namespace gradscope::cli
