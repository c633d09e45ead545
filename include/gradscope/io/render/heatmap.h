// ASCII heatmap of gradient flow: rows are nodes, columns are steps, glyphs ' ░▒▓█'.
//
//   gradscope::HeatmapOptions o;
//   o.metric = gradscope::HeatmapMetric::kGradNorm;
//   o.scale = gradscope::HeatmapScale::kLog;
//   o.width = gradscope::terminal_width();  o.color = gradscope::color_enabled();
//   std::cout << gradscope::render_heatmap(timeline, o);
//
// When there are more frames than columns, each column shows the largest value of the frames
// it covers (so a spike is never averaged away) and is flagged if any of them was. ' ' is no
// data or zero; '░▒▓█' are quarters of the scale; a non-finite value is '█'. With colour,
// vanishing cells are blue and exploding cells red (the only escape sequences it writes: node
// names are escaped by terminal_text). The renderer reads the frames' values; it computes no
// statistics.
#pragma once

#include <chrono>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>

#include "gradscope/core/audit/timeline.h"

namespace gradscope {

/// Which frame value is drawn.
enum class HeatmapMetric : uint8_t { kFlowIntensity, kGradNorm, kMeanAbsGrad, kMaxAbsGrad };
enum class HeatmapScale : uint8_t { kLinear, kLog };

/// Field name as in the exports ("flow_intensity", "grad_norm", ...).
const char* heatmap_metric_name(HeatmapMetric metric);
/// Parses "flow"/"flow_intensity", "norm"/"grad_norm", "mean"/"mean_abs_grad",
/// "max"/"max_abs_grad"; throws Error otherwise.
HeatmapMetric parse_heatmap_metric(std::string_view name);

struct HeatmapOptions {
  HeatmapMetric metric = HeatmapMetric::kFlowIntensity;
  HeatmapScale scale = HeatmapScale::kLinear;
  int width = 80;      ///< total columns of the output, names included
  bool color = false;  ///< ANSI colours for flagged cells
};

/// The heatmap of the timeline's frames, with a title, a step axis and the scale.
std::string render_heatmap(const Timeline& timeline, const HeatmapOptions& options);

/// Redraws a heatmap in place on a terminal, at most `max_per_second` times a second.
class LiveHeatmap {
 public:
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  /// `clock` is for tests; the default is std::chrono::steady_clock::now.
  LiveHeatmap(std::ostream& out, HeatmapOptions options, double max_per_second = 4, Clock clock = {});
  /// Redraws when enough time has passed since the last draw; returns whether it drew.
  bool update(const Timeline& timeline);
  /// Redraws now (e.g. for the final frame).
  void draw(const Timeline& timeline);

 private:
  std::ostream& out_;
  HeatmapOptions options_;
  std::chrono::steady_clock::duration interval_;
  Clock clock_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point last_{};
  int lines_ = 0;
};

}  // namespace gradscope
