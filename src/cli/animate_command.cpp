// gradscope animate RUN: the gradient-flow heatmap of a saved run; with --follow it redraws in
// place while the run is being written, until its writer closes it.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <limits>
#include <thread>

#include "commands.h"
#include "gradscope/io/render/flow_export.h"
#include "gradscope/io/render/heatmap.h"
#include "gradscope/io/render/terminal.h"
#include "option_checks.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

struct AnimateOptions {
  std::string run, metric = "flow";
  int64_t from = 0, to = std::numeric_limits<int64_t>::max();
  bool log = false, follow = false, partial = false, json = false;
  int width = 0;
  double max_per_second = 4;
};

HeatmapOptions heatmap_options(const AnimateOptions& opt) {
  HeatmapOptions h;
  h.metric = parse_heatmap_metric(opt.metric);
  h.scale = opt.log ? HeatmapScale::kLog : HeatmapScale::kLinear;
  h.width = opt.width > 0 ? opt.width : terminal_width();
  h.color = color_enabled();
  return h;
}

// Polls the run for new steps and redraws at most `max_per_second` times a second.
int follow(const AnimateOptions& opt, const HeatmapOptions& h) {
  RunReader reader(opt.run, ReadOptions{opt.partial});
  Timeline timeline(reader.metadata().thresholds);
  LiveHeatmap live(std::cout, h, opt.max_per_second);
  int64_t next = opt.from;
  for (;;) {
    reader.refresh_metadata();
    const bool closed = !reader.metadata().end_time.empty();  // read before the steps
    int64_t last = next - 1;
    reader.for_each([&](const Record& r) {
      timeline.add(r);
      last = r.step;
    }, {next, opt.to});
    timeline.finish();
    if (closed || last >= opt.to) break;  // (last + 1 would overflow at the largest step)
    next = last + 1;
    if (!timeline.frames().empty() && live.update(timeline)) check_stdout();  // else it would redraw forever
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  print_warnings(reader);
  if (timeline.frames().empty()) throw Error("run '" + opt.run + "': no steps recorded");
  live.draw(timeline);
  return kExitOk;
}

int run_animate(const AnimateOptions& opt) {
  if (opt.from > opt.to)
    throw UsageError("--from " + std::to_string(opt.from) + " is after --to " + std::to_string(opt.to));
  const HeatmapOptions h = heatmap_options(opt);
  if (opt.follow) return follow(opt, h);
  const LoadedRun run = load_run(opt.run, opt.partial, {opt.from, opt.to});
  if (opt.json) {
    std::cout << render_frames_json(run.timeline);  // what the heatmap draws, as numbers
    return kExitOk;
  }
  std::cout << render_heatmap(run.timeline, h);
  return kExitOk;
}

}  // namespace

void add_animate_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<AnimateOptions>();
  CLI::App* cmd = app.add_subcommand("animate", "Draw a saved run's gradient flow as a heatmap (nodes x steps)");
  cmd->add_option("RUN", opt->run, "run directory (or its run.db)")->required();
  cmd->add_option("--metric", opt->metric, "flow (norm / largest norm of the step), norm, mean or max")
      ->check(CLI::IsMember({"flow", "norm", "mean", "max", "flow_intensity", "grad_norm", "mean_abs_grad",
                             "max_abs_grad"}))
      ->capture_default_str();
  cmd->add_option("--from", opt->from, "first step")->transform(step_number());
  cmd->add_option("--to", opt->to, "last step")->transform(step_number());
  cmd->add_flag("--log", opt->log, "log scale");
  cmd->add_option("--width", opt->width, "columns (default: the terminal's)")->check(CLI::Range(30, 10000));
  CLI::Option* follow =
      cmd->add_flag("--follow", opt->follow, "redraw in place while the run is written, until it is closed");
  cmd->add_flag("--json", opt->json,
                "the selected steps' frames as JSON (as export --format json), instead of the heatmap")
      ->excludes(follow);
  cmd->add_option("--fps", opt->max_per_second, "with --follow: most redraws per second")
      ->check(number_in(0.1, 30.0))
      ->capture_default_str();
  add_partial_flag(cmd, opt->partial);
  cmd->callback([opt, &exit_code] { exit_code = run_animate(*opt); });
}

}  // namespace gradscope::cli
