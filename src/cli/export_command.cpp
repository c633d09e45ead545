// gradscope export RUN --format json|csv|jsonl: the frames (json, csv) or every record (jsonl).
#include <fstream>
#include <iostream>

#include "commands.h"
#include "gradscope/io/flow_export.h"
#include "gradscope/io/terminal.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

struct ExportOptions {
  std::string run, format, output;
  bool partial = false;
};

int run_export(const ExportOptions& opt) {
  std::ofstream file;
  if (!opt.output.empty()) {
    file.open(opt.output, std::ios::binary);
    if (!file) throw Error("cannot write '" + opt.output + "'");
  }
  std::ostream& out = opt.output.empty() ? std::cout : file;
  if (opt.format == "jsonl") {
    // Streams record by record: no frames are built.
    RunReader reader(opt.run, ReadOptions{opt.partial});
    if (reader.step_count() == 0) throw Error("run '" + opt.run + "': no steps recorded");
    ProgressBar bar("exporting " + opt.run);
    reader.for_each([&](const Record& r) { out << record_jsonl(r); }, {},
                    [&](int64_t done, int64_t total) { bar.update(done, total); });
    bar.finish();
    print_warnings(reader);
  } else {
    const LoadedRun run = load_run(opt.run, opt.partial);
    out << (opt.format == "json" ? render_frames_json(run.timeline) : render_frames_csv(run.timeline));
  }
  if (opt.output.empty()) {
    check_stdout();
  } else {
    file.close();  // a failed flush shows only here
    if (!file) throw Error("cannot write '" + opt.output + "'");
  }
  return kExitOk;
}

}  // namespace

void add_export_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand("export", "Write a saved run's frames (json, csv) or records (jsonl)");
  cmd->add_option("RUN", opt->run, "run directory (or its run.db)")->required();
  cmd->add_option("--format", opt->format, "json (frames), csv (one row per node per step), jsonl (records)")
      ->required()
      ->check(CLI::IsMember({"json", "csv", "jsonl"}));
  cmd->add_option("-o,--output", opt->output, "file to write (default: stdout)");
  add_partial_flag(cmd, opt->partial);
  cmd->callback([opt, &exit_code] { exit_code = run_export(*opt); });
}

}  // namespace gradscope::cli
