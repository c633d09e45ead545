#include "gradscope/io/render/heatmap.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "gradscope/core/error.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/render/table.h"

namespace gradscope {
namespace {

constexpr const char* kGlyphs[] = {" ", "░", "▒", "▓", "█"};
constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();

double value_of(const FlowEntry& e, HeatmapMetric m) {
  switch (m) {
    case HeatmapMetric::kFlowIntensity: return e.flow_intensity;
    case HeatmapMetric::kGradNorm: return e.grad_norm;
    case HeatmapMetric::kMeanAbsGrad: return e.mean_abs_grad;
    case HeatmapMetric::kMaxAbsGrad: return e.max_abs_grad;
  }
  return 0;
}

// Code points, which is the display width of the names we print (no wide characters assumed).
std::size_t display_width(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80;
  return n;
}

// Keeps the first `width` - 1 code points and an ellipsis.
std::string fit(const std::string& s, std::size_t width) {
  if (display_width(s) <= width) return s + std::string(width - display_width(s), ' ');
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xc0) != 0x80 && ++n > width - 1) break;
    out += s[i];
  }
  return out + "…";
}

struct Cell {
  double value = kAbsent;  // largest value of the covered frames; NaN: none present
  bool present = false, nonfinite = false, vanishing = false, exploding = false;
};

}  // namespace

const char* heatmap_metric_name(HeatmapMetric metric) {
  switch (metric) {
    case HeatmapMetric::kFlowIntensity: return "flow_intensity";
    case HeatmapMetric::kGradNorm: return "grad_norm";
    case HeatmapMetric::kMeanAbsGrad: return "mean_abs_grad";
    case HeatmapMetric::kMaxAbsGrad: return "max_abs_grad";
  }
  return "invalid";
}

HeatmapMetric parse_heatmap_metric(std::string_view name) {
  if (name == "flow" || name == "flow_intensity") return HeatmapMetric::kFlowIntensity;
  if (name == "norm" || name == "grad_norm") return HeatmapMetric::kGradNorm;
  if (name == "mean" || name == "mean_abs_grad") return HeatmapMetric::kMeanAbsGrad;
  if (name == "max" || name == "max_abs_grad") return HeatmapMetric::kMaxAbsGrad;
  throw Error("heatmap metric '" + std::string(name) + "': expected flow, norm, mean or max");
}

std::string render_heatmap(const Timeline& timeline, const HeatmapOptions& o) {
  const auto& frames = timeline.frames();
  const std::size_t nodes = timeline.nodes().size();
  const char* scale_name = o.scale == HeatmapScale::kLog ? "log" : "linear";
  if (frames.empty()) return "gradient flow: no steps recorded\n";

  // Names, and how many flagged frames each row had (shown after the row).
  std::vector<std::string> names(nodes), suffix(nodes);
  std::vector<int64_t> vanishing(nodes), exploding(nodes);
  for (const Frame& f : frames)
    for (const FlowEntry& e : f.layers) {
      vanishing[e.node] += e.is_vanishing;
      exploding[e.node] += e.is_exploding;
    }
  std::size_t name_w = 4, suffix_w = 0;
  for (std::size_t i = 0; i < nodes; ++i) {
    names[i] = terminal_text(timeline.nodes()[i]);  // a name must not drive the terminal or break the grid
    name_w = std::max(name_w, display_width(names[i]));
    if (vanishing[i]) suffix[i] += fmt::format(" vanishing {}", vanishing[i]);
    if (exploding[i]) suffix[i] += fmt::format(" exploding {}", exploding[i]);
    suffix_w = std::max(suffix_w, suffix[i].size());
  }
  const int width = std::max(o.width, 30);
  name_w = std::min<std::size_t>(name_w, static_cast<std::size_t>(std::max(8, width / 3)));
  const int room = width - static_cast<int>(name_w) - 3 - static_cast<int>(suffix_w);  // " |" and "|"
  const std::size_t cols = std::min<std::size_t>(frames.size(), static_cast<std::size_t>(std::max(10, room)));

  // Resample: frame f goes to column f * cols / frames.
  std::vector<Cell> grid(nodes * cols);
  for (std::size_t f = 0; f < frames.size(); ++f) {
    const std::size_t c = f * cols / frames.size();
    for (const FlowEntry& e : frames[f].layers) {
      Cell& cell = grid[e.node * cols + c];
      const double v = value_of(e, o.metric);
      cell.present = true;
      cell.vanishing |= e.is_vanishing;
      cell.exploding |= e.is_exploding;
      if (!std::isfinite(v)) cell.nonfinite = true;
      else if (std::isnan(cell.value) || v > cell.value) cell.value = v;
    }
  }
  // The scale: [0, hi] linear, or [lo, hi] over positive values in log.
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const Cell& c : grid)
    if (c.present && !std::isnan(c.value)) {
      hi = std::max(hi, c.value);
      if (c.value > 0) lo = std::min(lo, c.value);
    }
  if (o.metric == HeatmapMetric::kFlowIntensity && o.scale == HeatmapScale::kLinear) hi = 1.0;
  auto level = [&](const Cell& c) -> int {
    if (c.nonfinite) return 4;
    if (!c.present || std::isnan(c.value) || c.value <= 0 || hi <= 0) return 0;
    double x = c.value / hi;
    if (o.scale == HeatmapScale::kLog) x = hi > lo ? std::log(c.value / lo) / std::log(hi / lo) : 1.0;
    return std::clamp(1 + static_cast<int>(std::floor(x * 4)), 1, 4);
  };

  const int64_t first = frames.front().step, last = frames.back().step;
  std::string out = fmt::format("gradient flow: {}, {} scale, steps {}..{} ({} frame{}", heatmap_metric_name(o.metric),
                                scale_name, first, last, frames.size(), frames.size() == 1 ? "" : "s");
  if (cols < frames.size()) out += fmt::format(", up to {} per column", (frames.size() + cols - 1) / cols);
  out += ")\n";
  for (std::size_t n = 0; n < nodes; ++n) {
    out += fit(names[n], name_w) + " |";
    const char* open = nullptr;
    for (std::size_t c = 0; c < cols; ++c) {
      const Cell& cell = grid[n * cols + c];
      const char* want = !o.color ? nullptr : cell.exploding ? "\x1b[31m" : cell.vanishing ? "\x1b[34m" : nullptr;
      if (want != open) {
        out += want ? want : "\x1b[0m";
        open = want;
      }
      out += kGlyphs[level(cell)];
    }
    if (open) out += "\x1b[0m";
    out += "|" + suffix[n] + "\n";
  }
  const std::string left = std::to_string(first), right = std::to_string(last);
  std::string axis(cols, ' ');
  axis.replace(0, std::min(left.size(), cols), left.substr(0, cols));
  if (cols >= left.size() + right.size() + 1) axis.replace(cols - right.size(), right.size(), right);
  out += std::string(name_w, ' ') + "  " + axis + "  step\n";
  out += fmt::format("scale: ' ' none/0  ░▒▓█ quarters of {}{}", o.scale == HeatmapScale::kLog
                                                                     ? "[" + format_measure(lo) + ", "
                                                                     : "[0, ",
                     format_measure(hi) + "]");
  out += o.color ? "  blue vanishing  red exploding\n" : "\n";
  return out;
}

LiveHeatmap::LiveHeatmap(std::ostream& out, HeatmapOptions options, double max_per_second, Clock clock)
    : out_(out),
      options_(options),
      interval_(std::chrono::duration_cast<std::chrono::steady_clock::duration>(
          std::chrono::duration<double>(max_per_second > 0 ? 1.0 / max_per_second : 0.0))),
      clock_(clock ? std::move(clock) : Clock([] { return std::chrono::steady_clock::now(); })) {}

bool LiveHeatmap::update(const Timeline& timeline) {
  const auto now = clock_();
  if (drawn_ && now - last_ < interval_) return false;
  draw(timeline);
  last_ = now;
  return true;
}

void LiveHeatmap::draw(const Timeline& timeline) {
  const std::string text = render_heatmap(timeline, options_);
  // Move to the first line of the previous drawing and clear to the end of the screen.
  if (lines_ > 0) out_ << "\x1b[" << lines_ << "F\x1b[J";
  out_ << text << std::flush;
  lines_ = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  if (!drawn_) last_ = clock_();
  drawn_ = true;
}

}  // namespace gradscope
