// gradscope ls DIR: the runs in a folder with their size, start time and health. --json says
// the same as one document with each run's findings (docs/agent-json.md); --check exits 1 when
// any listed run is unhealthy, else 3 when one could not be read, so a CI job can gate a folder.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/render/findings_json.h"
#include "gradscope/io/render/run_report.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/trees/text.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

struct LsOptions {
  std::string dir;
  bool json = false, check = false;
};

// One run as ls sees it: loaded and judged, or the error that stopped it.
struct ListedRun {
  std::string name;  ///< the folder's name, raw
  std::string error;
  int64_t steps = 0;
  std::size_t nodes = 0;
  std::string started;
  bool closed = false, unhealthy = false;
  std::string health;  ///< the text column
  std::vector<Finding> findings;
};

ListedRun list_run(const fs::path& r) {
  ListedRun out;
  out.name = r.filename().string();
  try {
    const LoadedRun run = load_run(r.string(), false, {}, false, /*frames=*/false);
    const std::optional<EmbeddingRunSummary> embedding = load_embedding_summary(run.path);
    const std::optional<TreeRunSummary> trees = load_tree_summary(run.path);
    const EmbeddingRunSummary* emb = embedding ? &*embedding : nullptr;
    const TreeRunSummary* tree_run = trees ? &*trees : nullptr;
    out.steps = run.steps;
    out.nodes = run.report.nodes.size();
    out.started = run.meta.start_time;
    out.closed = !run.meta.end_time.empty();
    out.unhealthy = run_unhealthy(run.report, run.flow, emb, tree_run);
    out.findings = run_findings(run.report, run.flow, emb, tree_run);
    // Node names and the runs' metadata are shown escaped.
    std::string health = out.unhealthy ? "unhealthy" : "healthy";
    const auto flagged = run.report.flagged_worst_first();
    if (!flagged.empty())
      health += fmt::format(": {} flagged, worst {} [{}]", flagged.size(),
                            terminal_text(flagged.front()->node), flagged.front()->flags.join());
    // A tree run has no gradients to speak of: its rounds speak instead.
    if (tree_run)
      health += fmt::format("; {} boosting rounds", tree_run->report.rounds);
    else
      health += fmt::format("; gradient flow {}", flow_health_name(run.flow.health));
    health += embedding_verdict(emb) + tree_verdict(tree_run);
    if (!out.closed) health += " (not closed)";
    out.health = health;
  } catch (const Error& e) {
    out.error = e.what();  // one bad run must not hide the others
  }
  return out;
}

void print_text(const std::string& dir, const std::vector<ListedRun>& runs) {
  if (runs.empty()) {
    std::cout << "no runs in " << terminal_text(dir) << "\n";
    return;
  }
  std::size_t w = 3;
  for (const auto& r : runs) w = std::max(w, terminal_text(r.name).size());
  std::cout << fmt::format("{:<{}}  {:>7}  {:>5}  {:<20}  {}\n", "run", w, "steps", "nodes",
                           "started", "health");
  for (const auto& r : runs) {
    const std::string name = terminal_text(r.name);
    if (!r.error.empty())
      std::cout << fmt::format("{:<{}}  {:>7}  {:>5}  {:<20}  error: {}\n", name, w, "-", "-", "-",
                               terminal_text(r.error));
    else
      std::cout << fmt::format("{:<{}}  {:>7}  {:>5}  {:<20}  {}\n", name, w, r.steps, r.nodes,
                               terminal_text(r.started), r.health);
  }
}

void print_json(const std::string& dir, const std::vector<ListedRun>& runs) {
  Json list = Json::array();
  for (const ListedRun& r : runs) {
    if (!r.error.empty()) {
      list.push_back({{"name", r.name}, {"error", r.error}});
      continue;
    }
    list.push_back({{"name", r.name},
                    {"steps", r.steps},
                    {"nodes", r.nodes},
                    {"started", r.started},
                    {"closed", r.closed},
                    {"unhealthy", r.unhealthy},
                    {"findings", Json::parse(render_findings_json(r.findings, -1))}});
  }
  const Json doc = {{"gradscope_ls", {{"dir", dir}, {"runs", list}}},
                    {"findings_version", kFindingsVersion}};
  std::cout << json_text(doc.dump(2, ' ', false, Json::error_handler_t::replace)) << "\n";
}

int run_ls(const LsOptions& opt) {
  std::error_code ec;
  if (!fs::is_directory(opt.dir, ec)) throw Error("cannot list '" + opt.dir + "': not a directory");
  std::vector<fs::path> paths;
  for (const auto& entry : fs::directory_iterator(opt.dir, ec))
    if (entry.is_directory() && fs::exists(entry.path() / "run.db")) paths.push_back(entry.path());
  if (ec) throw Error("cannot list '" + opt.dir + "': " + ec.message());
  std::sort(paths.begin(), paths.end());
  std::vector<ListedRun> runs;
  for (const fs::path& p : paths) runs.push_back(list_run(p));
  if (opt.json)
    print_json(opt.dir, runs);
  else
    print_text(opt.dir, runs);
  if (!opt.check) return kExitOk;
  bool unhealthy = false, unreadable = false;
  for (const ListedRun& r : runs) {
    unhealthy = unhealthy || r.unhealthy;
    unreadable = unreadable || !r.error.empty();
  }
  return unhealthy ? kExitUnhealthy : unreadable ? kExitData : kExitOk;
}

}  // namespace

void add_ls_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<LsOptions>();
  CLI::App* cmd = app.add_subcommand(
      "ls", "List the runs in a folder with their health (--check: exit 1 when any is unhealthy)");
  cmd->add_option("DIR", opt->dir, "folder holding run directories")->required();
  cmd->add_flag("--json", opt->json, "one JSON document: each run's health and findings");
  cmd->add_flag("--check", opt->check,
                "exit 1 when any listed run is unhealthy, else 3 when one could not be read");
  cmd->callback([opt, &exit_code] { exit_code = run_ls(*opt); });
}

}  // namespace gradscope::cli
