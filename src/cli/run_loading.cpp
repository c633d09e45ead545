#include "run_loading.h"

#include <fstream>
#include <iostream>

#include "gradscope/core/rules.h"
#include "gradscope/io/terminal.h"

namespace gradscope::cli {
namespace {

std::string& stored_command_line() {
  static std::string line;
  return line;
}

}  // namespace

void print_warnings(const RunReader& reader) {
  for (const std::string& w : reader.warnings()) std::cerr << "gradscope: warning: " << w << "\n";
}

LoadedRun load_run(const std::string& path, bool partial, StepRange range, bool series) {
  RunReader reader(path, ReadOptions{partial});
  if (reader.step_count() == 0) throw Error("run '" + path + "': no steps recorded");
  LoadedRun run{path, reader.metadata(), {}, Timeline(reader.metadata().thresholds), {}, {}, 0};
  ReportBuilder builder(run.meta.thresholds);
  SeriesBuilder steps(kSeriesSteps);
  ProgressBar bar("reading " + path);
  run.steps = reader.for_each(
      [&](const Record& r) {
        builder.add(r);
        run.timeline.add(r);
        if (series) steps.add(r);
      },
      range, [&](int64_t done, int64_t total) { bar.update(done, total); });
  bar.finish();
  print_warnings(reader);
  if (run.steps == 0) throw Error("run '" + path + "': no steps recorded in the selected range");
  run.timeline.finish();
  run.report = builder.build();
  run.flow = summarize_flow(run.timeline);
  if (series) run.series = steps.finish();
  return run;
}

void add_partial_flag(CLI::App* command, bool& partial) {
  command->add_flag("--partial", partial, "read the complete steps of a damaged run instead of failing");
}

void write_text_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();  // a failed flush shows only here
  if (!out) throw Error("cannot write '" + path + "'");
}

const std::string& command_line() { return stored_command_line(); }

void set_command_line(int argc, char** argv) {
  std::string line;
  for (int i = 0; i < argc; ++i) {
    if (i) line += ' ';
    const std::string arg = argv[i];
    const bool plain = !arg.empty() && arg.find_first_of(" \t\n'\"\\$`") == std::string::npos;
    if (plain) {
      line += arg;
    } else {  // shell-quote so the line can be pasted back
      line += '\'';
      for (char c : arg) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
      line += '\'';
    }
  }
  stored_command_line() = line;
}

}  // namespace gradscope::cli
