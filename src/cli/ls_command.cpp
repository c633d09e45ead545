// gradscope ls DIR: the runs in a folder with their size, start time and health.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <optional>

#include "commands.h"
#include "gradscope/io/embedding_store.h"
#include "gradscope/io/run_report.h"
#include "gradscope/io/safe_text.h"
#include "gradscope/io/tree_text.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

namespace fs = std::filesystem;

struct LsOptions {
  std::string dir;
};

int run_ls(const LsOptions& opt) {
  std::error_code ec;
  if (!fs::is_directory(opt.dir, ec)) throw Error("cannot list '" + opt.dir + "': not a directory");
  std::vector<fs::path> runs;
  for (const auto& entry : fs::directory_iterator(opt.dir, ec))
    if (entry.is_directory() && fs::exists(entry.path() / "run.db")) runs.push_back(entry.path());
  if (ec) throw Error("cannot list '" + opt.dir + "': " + ec.message());
  std::sort(runs.begin(), runs.end());
  if (runs.empty()) {
    std::cout << "no runs in " << terminal_text(opt.dir) << "\n";
    return kExitOk;
  }
  // Folder names, the runs' metadata and their node names are shown escaped.
  std::size_t w = 3;
  for (const auto& r : runs) w = std::max(w, terminal_text(r.filename().string()).size());
  std::cout << fmt::format("{:<{}}  {:>7}  {:>5}  {:<20}  {}\n", "run", w, "steps", "nodes", "started", "health");
  for (const auto& r : runs) {
    const std::string name = terminal_text(r.filename().string());
    try {
      const LoadedRun run = load_run(r.string(), false, {}, false, /*frames=*/false);
      const std::optional<EmbeddingRunSummary> embedding = load_embedding_summary(run.path);
      const std::optional<TreeRunSummary> trees = load_tree_summary(run.path);
      const TreeRunSummary* tree_run = trees ? &*trees : nullptr;
      std::string health =
          run_unhealthy(run.report, run.flow, embedding ? &*embedding : nullptr, tree_run)
              ? "unhealthy"
              : "healthy";
      const auto flagged = run.report.flagged_worst_first();
      if (!flagged.empty())
        health += fmt::format(": {} flagged, worst {} [{}]", flagged.size(), terminal_text(flagged.front()->node),
                              flagged.front()->flags.join());
      // A tree run has no gradients to speak of: its rounds speak instead.
      if (tree_run)
        health += fmt::format("; {} boosting rounds", tree_run->report.rounds);
      else
        health += fmt::format("; gradient flow {}", flow_health_name(run.flow.health));
      health += embedding_verdict(embedding ? &*embedding : nullptr) + tree_verdict(tree_run);
      if (run.meta.end_time.empty()) health += " (not closed)";
      std::cout << fmt::format("{:<{}}  {:>7}  {:>5}  {:<20}  {}\n", name, w, run.steps, run.report.nodes.size(),
                               terminal_text(run.meta.start_time), health);
    } catch (const Error& e) {
      // One bad run must not hide the others.
      std::cout << fmt::format("{:<{}}  {:>7}  {:>5}  {:<20}  error: {}\n", name, w, "-", "-", "-",
                               terminal_text(e.what()));
    }
  }
  return kExitOk;
}

}  // namespace

void add_ls_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<LsOptions>();
  CLI::App* cmd = app.add_subcommand("ls", "List the runs in a folder with their health");
  cmd->add_option("DIR", opt->dir, "folder holding run directories")->required();
  cmd->callback([opt, &exit_code] { exit_code = run_ls(*opt); });
}

}  // namespace gradscope::cli
