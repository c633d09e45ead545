// gradscope demo: trains a healthy model and planted pathologies on real data, audits every
// node at every step, writes each as a run, and shows where each sick one fails; then a
// matrix-factorisation model with its embedding tables tracked, on real interaction data.
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>

#include "commands.h"
#include "demo_compress.h"
#include "demo_trees.h"
#include "gradscope/io/compress/rows_json.h"
#include "gradscope/io/embedding/json.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/render/json.h"
#include "gradscope/io/render/run_report.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/io/render/table.h"
#include "gradscope/torch/compress/apply_recipe.h"
#include "html_report.h"
#include "report_text.h"
#include "interactions.h"
#include "matrix_factorization.h"
#include "mf_truth.h"
#include "run_loading.h"
#include "scenario.h"

namespace gradscope::cli {
namespace {

namespace fs = std::filesystem;

// Defaults measured on the 2-core machine (README): the whole demo under 2 minutes, and with
// --quick under 30 s, each sick model still flagged on its planted node. The MF models train
// as tuned (MfOptions' epochs) unless --quick.
constexpr int kSteps = 200;
const int kMfEpochs = scenarios::MfOptions{}.epochs;
constexpr int kQuickSteps = 60, kQuickMfEpochs = 5;

struct DemoOptions {
  std::string data_dir = "data";
  std::string out_dir = "gradscope-runs";
  int steps = kSteps;
  int mf_epochs = kMfEpochs;
  bool quick = false;
  uint64_t seed = 7;
};

// A one-line progress bar on stderr, only when stderr is a terminal.
void show_progress(const std::string& name, int64_t done, int64_t total) {
  if (!isatty(STDERR_FILENO)) return;
  constexpr int kWidth = 30;
  const auto filled = static_cast<int>(total ? done * kWidth / total : kWidth);
  std::fprintf(stderr, "\r  %-20s [%s%s] %lld/%lld", name.c_str(), std::string(filled, '#').c_str(),
               std::string(kWidth - filled, '.').c_str(), static_cast<long long>(done),
               static_cast<long long>(total));
  if (done == total) std::fprintf(stderr, "\r%*s\r", kWidth + 50, "");
  std::fflush(stderr);
}


// A run under the output folder, rewritten on every call of the demo.
RunWriterOptions demo_run(const std::string& name) {
  RunWriterOptions store;
  store.name = name;
  store.command_line = command_line();
  store.overwrite = true;
  return store;
}

// The run as saved, read back as `gradscope html` reads it.
LoadedRun load_saved(const fs::path& dir) { return load_run(dir.string(), false, {}, /*series=*/true); }

// report.html beside the saved run.
void write_html(const LoadedRun& saved, std::vector<fs::path>& pages) {
  pages.push_back(fs::path(saved.path) / "report.html");
  write_html_report(saved, pages.back().string());
}

// The models the demo trains on digits: the healthy control first, then planted pathologies.
const std::vector<std::string> kDemoScenarios = {"healthy-mlp", "vanishing-trunk", "dying-relu",
                                                 "nan-later"};

// Trains one digits scenario as a run; returns its summary line.
std::string run_digits_model(const std::string& name, const Digits& data, const DemoOptions& opt,
                             std::vector<fs::path>& pages) {
  const scenarios::Scenario& s = scenarios::scenario(name);
  const fs::path dir = fs::path(opt.out_dir) / ("demo-" + name);
  // Every step goes to the run store as the step ends (a background thread writes).
  RunWriter run(dir.string(), demo_run("demo-" + name));
  const scenarios::ScenarioRun r = scenarios::run_scenario(
      s, data, opt.steps, opt.seed, [&](int done) { show_progress(name, done, opt.steps); }, &run);
  run.close();
  // report.{txt,json,csv} and report.html from one source, the run as saved (it holds the whole
  // report: channel views, leakage, gradient SNR, the node order): the files are what
  // `gradscope report RUN` prints.
  const LoadedRun saved = load_saved(dir);
  write_run_reports(dir.string());
  write_html(saved, pages);
  std::printf("\n== %s: %s\n   test accuracy %.3f, final loss %.3f, %.1f s\n\n", name.c_str(),
              s.planted.c_str(), r.test_accuracy, r.final_loss, r.seconds);
  std::cout << render_table(saved.report);
  char line[256];
  std::snprintf(line, sizeof line, "  %-24s accuracy %.3f  ", name.c_str(), r.test_accuracy);
  return line + render_verdict(saved.report);
}

// MovieLens when fetched, otherwise the digits pixels (said so on stdout).
scenarios::Interactions interaction_data(const DemoOptions& opt) {
  const fs::path movielens = fs::path(opt.data_dir) / "movielens.csv";
  if (fs::exists(movielens)) return scenarios::load_movielens(movielens.string());
  scenarios::Interactions d =
      scenarios::digits_pixel_interactions((fs::path(opt.data_dir) / "digits.csv").string());
  std::cout << "\nMovieLens not found (run scripts/fetch-data.sh movielens); using " << d.description
            << "\n";
  return d;
}

// The two MF runs: the tuned model (MfOptions' defaults, docs/validation.md), and a planted
// true oscillation: every 4th item row is decayed past its minimum at each step (an L2 step,
// lr x 2 x l2 = 1.9), so it flips sign update after update. The demo checks the flips with its
// own code (MfTruth: cosines between consecutive updates from the weights before and after
// each step) and prints them beside the findings.
struct MfVariant {
  std::string suffix;   ///< appended to "mf-<data>"
  std::string planted;  ///< empty for the healthy one
  scenarios::MfFaults faults;
};
scenarios::MfFaults oscillation() {
  scenarios::MfFaults f;
  f.oscillate_factor = 1.9;
  f.oscillate_every = 4;
  return f;
}
const MfVariant kMfVariants[] = {
    {"", "", {}},
    {"-oscillation",
     "every 4th item row decayed past its minimum each step (L2 step, lr x 2 x l2 = 1.9): "
     "those rows flip sign update after update (true zombie rows)",
     oscillation()}};

std::string run_mf_model(const scenarios::Interactions& data, const MfVariant& variant,
                         const DemoOptions& opt, std::vector<fs::path>& pages) {
  const std::string name = "mf-" + data.name + variant.suffix;
  const fs::path dir = fs::path(opt.out_dir) / ("demo-" + name);
  RunWriter run(dir.string(), demo_run("demo-" + name));
  scenarios::MfOptions mf;
  mf.epochs = opt.mf_epochs;
  mf.seed = opt.seed;
  mf.faults = variant.faults;
  mf.progress = [&](int64_t done, int64_t total) { show_progress(name, done, total); };
  mf.on_step = [&](const std::vector<Record>& step) {
    for (const Record& record : step) run.add(record);
  };
  scenarios::MfTruth truth(data, mf.dim);
  mf.on_update = [&](const scenarios::MfStep& step) { truth.add(step); };
  const scenarios::MfRun r = scenarios::train_matrix_factorization(data, mf);
  run.close();
  const LoadedRun saved = load_saved(dir);  // the report, as `gradscope report` would judge it
  const Report& report = saved.report;
  write_text_file((dir / "embedding_report.json").string(), render_embedding_hub_json(r.report));
  EmbeddingRunSummary summary;
  for (std::size_t t = 0; t < r.report.tables.size(); ++t)
    summary.tables.push_back({r.report.tables[t], r.profiles[t]});
  summary.correlations = r.report.correlations;
  save_embedding_summary(dir.string(), summary);
  // The rows' lookups and norms, so that `gradscope compress RUN --table item=BYTES` works on
  // the demo's runs as on any run that saved them (docs/compression.md).
  std::vector<compress::RowProfile> rows;
  for (std::size_t t = 0; t < r.tables.size(); ++t)
    rows.push_back(compress::row_profile(r.report.tables[t].layer, r.tables[t], r.rows[t]));
  save_row_profiles(dir.string(), rows);
  write_html(saved, pages);  // after the summary: the page shows the tables
  // One verdict for the run, last, after the nodes, the tables' findings and the evidence a
  // reader can check each finding against (measured apart from the tracker): a verdict under
  // the node table would say "healthy" above the findings that make the run unhealthy.
  std::string text =
      render_table(report, /*with_verdict=*/false) + render_embedding_findings(summary);
  for (int t = 0; t < static_cast<int>(r.report.tables.size()); ++t)
    for (const std::string& line : truth.evidence(r, t))
      text += "   evidence, " + r.report.tables[t].layer + ": " + line + "\n";
  const std::string verdict = render_run_verdict(report, saved.flow, &summary);
  text += "\n" + verdict + "\n";
  write_run_reports(dir.string());  // without the evidence lines, which the demo measures itself

  const auto top_k = static_cast<long long>(mf.top_k);
  std::printf("\n== %s: BPR matrix factorisation, dim %lld, %s lr %g, l2 %g, user and item tables "
              "tracked every step\n",
              name.c_str(), static_cast<long long>(mf.dim), mf.sgd ? "SGD" : "Adam", mf.lr, mf.l2);
  if (!variant.planted.empty()) std::printf("   planted: %s\n", variant.planted.c_str());
  std::printf("   data: %s\n   %lld users, %lld items, %zu training pairs, %zu held-out items "
              "(one per user)\n",
              data.description.c_str(), static_cast<long long>(data.users),
              static_cast<long long>(data.items), data.train.size(), data.test_user.size());
  std::printf("   HR@%lld %.3f, NDCG@%lld %.3f on the held-out items (full ranking), %d epochs "
              "(%lld steps), final loss %.3f, %.1f s\n\n",
              top_k, r.hr, top_k, r.ndcg, mf.epochs, static_cast<long long>(r.steps),
              r.final_loss, r.seconds);
  std::cout << text;
  char line[256];
  std::snprintf(line, sizeof line, "  %-24s HR@%lld %.3f  ", name.c_str(), top_k, r.hr);
  return line + verdict;
}

int run_demo(DemoOptions opt) {
  const std::string digits_path = (fs::path(opt.data_dir) / "digits.csv").string();
  const Digits data = load_digits(digits_path, 0.2, opt.seed, scenarios::kScenarioBatch);
  std::cout << "gradscope demo" << (opt.quick ? " --quick" : "") << ": sklearn digits ("
            << data.x_train.size(0) << " train / " << data.x_test.size(0) << " test images), "
            << opt.steps << " Adam steps per model, every node audited at every step; then matrix "
            << "factorisation, " << opt.mf_epochs << " epochs, embedding tables tracked; then "
            << "boosted trees trained live with XGBoost, every round recorded\n";

  std::vector<std::string> summary;
  std::vector<fs::path> pages;
  for (const std::string& name : kDemoScenarios) summary.push_back(run_digits_model(name, data, opt, pages));
  summary.push_back(run_compression_demo(data, opt.out_dir, opt.steps, opt.seed, pages));
  for (std::string& line : run_tree_demo(opt.data_dir, opt.out_dir, opt.seed, pages))
    summary.push_back(std::move(line));
  const scenarios::Interactions interactions = interaction_data(opt);
  for (const MfVariant& variant : kMfVariants) summary.push_back(run_mf_model(interactions, variant, opt, pages));

  std::cout << "\nsummary\n";
  for (const std::string& s : summary) std::cout << s << "\n";
  std::cout << "reports: " << opt.out_dir
            << "/demo-*/report.{txt,json,csv} (tree runs: report.{txt,json}), what `gradscope report RUN` prints; "
            << "embedding tables: "
            << opt.out_dir << "/demo-mf-*/embedding_report.json. Each run.db holds the whole run (tree, embedding "
            << "and compression analyses included): `gradscope export RUN --format documents -o DIR` writes them "
            << "out as files\n";
  std::cout << "HTML reports (open in a browser; they work offline):\n";
  for (const fs::path& page : pages) std::cout << "  " << page.string() << "\n";
  const std::string sick = (fs::path(opt.out_dir) / "demo-vanishing-trunk").string();
  std::cout << "runs: " << opt.out_dir << "/demo-*/run.db; try `gradscope report " << sick
            << "` and `gradscope animate " << sick << " --metric norm --log`\n";
  return kExitOk;
}

// A seed is checked as text: CLI11 reads "-1" into an unsigned seed as 2^64 - 1 and numbers
// past 2^64 - 1 as 2^64 - 1, both without a word.
CLI::Validator seed_text() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto parsed = std::from_chars(text.data(), end, value);
        if (text.empty() || parsed.ec != std::errc() || parsed.ptr != end)
          return "Value " + text + " is not a whole number from 0 to " +
                 std::to_string(std::numeric_limits<uint64_t>::max());
        return "";
      },
      "0..2^64-1");
}

}  // namespace

void add_demo_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<DemoOptions>();
  CLI::App* cmd = app.add_subcommand("demo", kDemoSummary);
  cmd->add_option("--data-dir", opt->data_dir,
                  "folder with digits.csv (and movielens.csv when fetched; scripts/fetch-data.sh)")
      ->capture_default_str();
  cmd->add_option("--out", opt->out_dir, "folder for the runs and reports")->capture_default_str();
  CLI::Option* steps = cmd->add_option("--steps", opt->steps, "training steps per digits model")
                           ->check(CLI::Range(1, 100000))
                           ->capture_default_str();
  CLI::Option* epochs =
      cmd->add_option("--mf-epochs", opt->mf_epochs, "epochs of each matrix-factorisation model")
          ->check(CLI::Range(1, 10000))
          ->capture_default_str();
  cmd->add_flag("--quick", opt->quick,
                "fewer steps and epochs (" + std::to_string(kQuickSteps) + " and " +
                    std::to_string(kQuickMfEpochs) + ") for a run of under 30 s; --steps and --mf-epochs still win");
  cmd->add_option("--seed", opt->seed, "random seed")->check(seed_text())->capture_default_str();
  cmd->callback([opt, steps, epochs, &exit_code] {
    DemoOptions o = *opt;
    if (o.quick && steps->count() == 0) o.steps = kQuickSteps;
    if (o.quick && epochs->count() == 0) o.mf_epochs = kQuickMfEpochs;
    exit_code = run_demo(o);
  });
}

}  // namespace gradscope::cli
