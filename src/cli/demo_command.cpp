// gradscope demo: trains a healthy model and planted pathologies on real data, audits every
// node at every step, writes each as a run, and shows where each sick one fails.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "commands.h"
#include "scenario.h"
#include "run_loading.h"
#include "gradscope/io/csv.h"
#include "gradscope/io/json.h"
#include "gradscope/io/run_writer.h"
#include "gradscope/io/table.h"

namespace gradscope::cli {
namespace {

struct DemoOptions {
  std::string data_dir = "data";
  std::string out_dir = "gradscope-runs";
  int steps = 200;
  uint64_t seed = 7;
};

// A one-line progress bar on stderr, only when stderr is a terminal.
void show_progress(const std::string& name, int done, int total) {
  if (!isatty(STDERR_FILENO)) return;
  constexpr int kWidth = 30;
  const int filled = total ? done * kWidth / total : kWidth;
  std::fprintf(stderr, "\r  %-20s [%s%s] %d/%d", name.c_str(), std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), done, total);
  if (done == total) std::fprintf(stderr, "\r%*s\r", kWidth + 40, "");
  std::fflush(stderr);
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw Error("cannot write '" + path.string() + "'");
}

// The models the demo trains: the healthy control first, then planted pathologies.
const std::vector<std::string> kDemoScenarios = {"healthy-mlp", "vanishing-trunk", "dying-relu",
                                                 "nan-later"};

int run_demo(const DemoOptions& opt) {
  const std::string digits_path = (std::filesystem::path(opt.data_dir) / "digits.csv").string();
  const Digits data = load_digits(digits_path, 0.2, opt.seed);
  std::cout << "gradscope demo: sklearn digits (" << data.x_train.size(0) << " train / "
            << data.x_test.size(0) << " test images), " << opt.steps
            << " Adam steps per model, every node audited at every step\n";

  std::vector<std::string> summary;
  for (const std::string& name : kDemoScenarios) {
    const scenarios::Scenario& s = scenarios::scenario(name);
    const std::filesystem::path dir = std::filesystem::path(opt.out_dir) / ("demo-" + name);
    // Every step's records go to the run store as the step ends (a background thread writes).
    RunWriterOptions store;
    store.name = "demo-" + name;
    store.command_line = command_line();
    store.overwrite = true;  // the demo's runs are rewritten on every call
    RunWriter run(dir.string(), store);
    const scenarios::ScenarioRun r = scenarios::run_scenario(
        s, data, opt.steps, opt.seed, [&](int done) { show_progress(name, done, opt.steps); },
        [&](const std::vector<Record>& records) {
          for (const Record& record : records) run.add(record);
        });
    run.close();
    const std::string table = render_table(r.report);
    write_file(dir / "report.txt", table);
    write_file(dir / "report.json", render_json(r.report));
    write_file(dir / "report.csv", render_csv(r.report));

    std::printf("\n== %s: %s\n   test accuracy %.3f, final loss %.3f, %.1f s\n\n", name.c_str(),
                s.planted.c_str(), r.test_accuracy, r.final_loss, r.seconds);
    std::cout << table;
    char line[256];
    std::snprintf(line, sizeof line, "  %-16s accuracy %.3f  ", name.c_str(), r.test_accuracy);
    summary.push_back(line + render_verdict(r.report));
  }
  std::cout << "\nsummary\n";
  for (const std::string& s : summary) std::cout << s << "\n";
  std::cout << "reports: " << opt.out_dir << "/demo-*/report.{txt,json,csv}\n";
  const std::string sick = (std::filesystem::path(opt.out_dir) / "demo-vanishing-trunk").string();
  std::cout << "runs: " << opt.out_dir << "/demo-*/run.db; try `gradscope report " << sick
            << "` and `gradscope animate " << sick << " --metric norm --log`\n";
  return kExitOk;
}

}  // namespace

void add_demo_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand(
      "demo", "Train a healthy model and sick ones on real data and report where each fails");
  cmd->add_option("--data-dir", opt->data_dir, "folder with digits.csv (scripts/fetch-data.sh)")
      ->capture_default_str();
  cmd->add_option("--out", opt->out_dir, "folder for the runs and reports")->capture_default_str();
  cmd->add_option("--steps", opt->steps, "training steps per model")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--seed", opt->seed, "random seed")->capture_default_str();
  cmd->callback([opt, &exit_code] { exit_code = run_demo(*opt); });
}

}  // namespace gradscope::cli
