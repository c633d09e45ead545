// gradscope html RUN -o report.html: the run as one self-contained page (charts inlined, no
// network), to open in a browser or share; --spec DIR also saves each chart's Vega-Lite spec;
// --beside OTHER draws another run's loss beside this one's.
#include <filesystem>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "gradscope/io/render/safe_text.h"
#include "html_report.h"

namespace gradscope::cli {
namespace {

struct HtmlOptions {
  std::string run, output, spec_dir, beside;
  bool partial = false, json = false;
};

int run_html(const HtmlOptions& opt) {
  const LoadedRun run = load_run(opt.run, opt.partial, {}, /*series=*/true);
  std::string output = opt.output;
  if (output.empty()) {  // beside run.db, whichever of the two the user named
    const std::filesystem::path p(opt.run);
    output = ((std::filesystem::is_directory(p) ? p : p.parent_path()) / "report.html").string();
  }
  std::optional<LoadedRun> beside;
  if (!opt.beside.empty()) beside = load_run(opt.beside, opt.partial, {}, /*series=*/true);
  const int charts = write_html_report(run, output, opt.spec_dir, beside ? &*beside : nullptr);
  if (opt.json) {
    const nlohmann::ordered_json doc = {
        {"gradscope_html",
         {{"page", output}, {"charts", charts}, {"spec_dir", opt.spec_dir.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(opt.spec_dir)}}}};
    std::cout << json_text(doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)) << "\n";
    return kExitOk;
  }
  std::cout << "wrote " << terminal_text(output) << " (" << charts << " charts)";
  if (!opt.spec_dir.empty()) std::cout << " and " << charts << " specs in " << terminal_text(opt.spec_dir);
  std::cout << "\n";
  return kExitOk;
}

}  // namespace

void add_html_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<HtmlOptions>();
  CLI::App* cmd = app.add_subcommand("html", "Write a saved run as one self-contained HTML report (works offline)");
  cmd->add_option("RUN", opt->run, "run directory (or its run.db)")->required();
  cmd->add_option("-o,--output", opt->output, "HTML file to write (default: RUN/report.html)");
  cmd->add_option("--spec", opt->spec_dir, "also write each chart's Vega-Lite spec as DIR/<chart>.json");
  cmd->add_option("--beside", opt->beside,
                  "another run (directory or run.db) whose loss and gradient norms are drawn beside this run's, "
                  "with its verdict: a blow-up next to its clipped twin");
  cmd->add_flag("--json", opt->json, "say what was written as one JSON document: page, charts, spec_dir");
  add_partial_flag(cmd, opt->partial);
  cmd->callback([opt, &exit_code] { exit_code = run_html(*opt); });
}

}  // namespace gradscope::cli
