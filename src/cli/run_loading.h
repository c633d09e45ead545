// Loading a saved run for the subcommands: the report, the timeline and the flow summary, in
// one pass over the records, with a progress bar on a terminal.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "gradscope/core/attention/rules.h"
#include "gradscope/core/audit/report.h"
#include "gradscope/core/audit/run_sink.h"
#include "gradscope/core/audit/series.h"
#include "gradscope/core/audit/timeline.h"
#include "gradscope/io/store/run_reader.h"

namespace gradscope::cli {

struct LoadedRun {
  std::string path;
  RunMetadata meta;
  Report report;      ///< as the audit that wrote the run built it (io/store/saved_report.h)
  RunSummary summary; ///< the audit's architecture, warnings and per-node values (schema 3)
  Timeline timeline;
  FlowSummary flow;
  std::vector<NodeSeries> series;  ///< per-node measures over at most kSeriesSteps steps (when asked)
  std::vector<AttentionRecord> attention;  ///< per node at most kSeriesSteps samples (with series)
  std::vector<StepScalar> scalars;         ///< per series at most 2 x kSeriesSteps values (with series)
  int64_t steps = 0;  ///< steps read
  std::vector<ReadDamage> damage;  ///< what a partial read left out (RunReader::damage())
};

/// Steps kept per node series (evenly spread over the run): enough for a chart's width.
inline constexpr int64_t kSeriesSteps = 400;

/// Reads `path` (in `range`): records, channel and similarity records, and the run's summary.
/// Throws Error "run '<path>': no steps recorded" for an empty run;
/// warnings of a partial read go to stderr. `series` also fills LoadedRun::series (only the
/// HTML report draws it; the other commands skip the work). `frames` = false keeps only the
/// last frame in LoadedRun::timeline (the flow summary is the same): the commands that draw no
/// frames spare the memory, a third of `gradscope report`'s time over 1M records.
LoadedRun load_run(const std::string& path, bool partial, StepRange range = {}, bool series = false,
                   bool frames = true);

/// Prints a partial reader's warnings to stderr as "gradscope: warning: ...", escaped by
/// terminal_text (they quote paths and node names).
void print_warnings(const RunReader& reader);

/// Adds --partial (read the complete steps of a damaged run instead of failing).
void add_partial_flag(CLI::App* command, bool& partial);

/// Writes `text` to `path` (replacing it); throws Error "cannot write '<path>'" on failure.
void write_text_file(const std::string& path, const std::string& text);

/// Makes std::cout note the cause of the first write to standard output that fails (its
/// output still goes through C's stdout, in order with printf). Called once, first, by main.
void watch_stdout();

/// Flushes standard output; throws Error "cannot write to standard output (<reason>)" when a
/// write to it failed (a full disk, a closed pipe), so no command exits 0 on lost output.
void check_stdout();

/// The command line gradscope was started with, for run metadata.
const std::string& command_line();
void set_command_line(int argc, char** argv);

}  // namespace gradscope::cli
