// The report's charts as Vega-Lite specs. Data comes as measured (report, timeline, series,
// embedding profile); only layout (positions in the node diagram) and display choices (which
// frames fit in the heatmap) are decided here.
#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "gradscope/core/attention/rules.h"
#include "gradscope/core/error.h"
#include "gradscope/io/html/report.h"
#include "gradscope/io/render/table.h"
#include "html/internal/loss.h"
#include "html/internal/spec.h"
#include "html/internal/theme.h"
#include "html/internal/trees.h"

namespace gradscope {
namespace {

using nlohmann::json;

constexpr int kWidth = internal::kChartWidth;

json number(double v) { return internal::chart_number(v); }

// What a non-finite or zero gradient norm was, for the heatmap cells a log scale cannot show.
const char* value_kind(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return "Inf";
  return v == 0 ? "zero" : "finite";
}

std::string text(const json& spec) { return internal::spec_text(spec); }

// The charts in page order. A chart whose data is empty is left out (the page says why):
// an empty Vega-Lite view is a blank box with infinite-extent warnings.
struct Charts {
  std::vector<Chart> list;
  void add(std::string name, std::string title, const json& spec) {
    const auto data = spec.find("data");
    if (data != spec.end() && data->contains("values") && (*data)["values"].empty()) return;
    list.push_back({std::move(name), std::move(title), text(spec)});
  }
};

json base(const std::string& title, const std::string& description) { return internal::chart_base(title, description); }

// Nodes in execution order, as a scale domain. Not as a "sort" array: Vega-Lite turns that into
// a Vega expression without escaping U+2028, which Vega's parser reads as a line break, so a
// node name holding it broke the chart.
json node_order(const Report& report) {
  json order = json::array();
  for (const NodeReport& n : report.nodes) order.push_back(n.node);
  return order;
}

// Highlights a node when its legend entry is clicked (shift-click for several).
json legend_pick() {
  return json::array({{{"name", "pick"}, {"select", {{"type", "point"}, {"fields", {"node"}}}}, {"bind", "legend"}}});
}
json picked_opacity() {
  return {{"condition", {{"param", "pick"}, {"value", 1}}}, {"value", 0.12}};
}

void gradient_flow(const HtmlReportInput& in, Charts& out) {
  const auto& frames = in.timeline->frames();
  const auto& names = in.timeline->nodes();
  const std::size_t n = frames.size();
  const std::size_t cols = std::min<std::size_t>(n, static_cast<std::size_t>(std::max(1, in.max_heatmap_steps)));
  json values = json::array();
  for (std::size_t c = 0; c < cols; ++c) {
    const Frame& f = frames[cols == n ? c : c * (n - 1) / std::max<std::size_t>(1, cols - 1)];
    for (const FlowEntry& e : f.layers)
      values.push_back({{"step", f.step}, {"node", names[e.node]}, {"grad_norm", number(e.grad_norm)},
                        {"kind", value_kind(e.grad_norm)}, {"flow_intensity", number(e.flow_intensity)},
                        {"status", e.is_exploding ? "exploding" : e.is_vanishing ? "vanishing" : "ok"}});
  }
  std::string subtitle = "L2 of each node's gradient at each audited step (log colour scale)";
  if (cols < n) subtitle += "; " + std::to_string(cols) + " of " + std::to_string(n) + " steps, evenly spaced";
  json spec = base("Gradient flow", subtitle);
  spec["data"] = {{"values", values}};
  const json x = {{"field", "step"}, {"type", "ordinal"}, {"title", "step"},
                  {"axis", {{"labelOverlap", true}, {"labelAngle", 0}}}};
  const json y = {{"field", "node"}, {"type", "nominal"}, {"scale", {{"domain", node_order(*in.report)}}}, {"title", nullptr}};
  const json tooltip = json::array({{{"field", "node"}}, {{"field", "step"}},
                                    {{"field", "grad_norm"}, {"format", ".3e"}}, {{"field", "kind"}},
                                    {{"field", "status"}}, {{"field", "flow_intensity"}, {"format", ".3f"}}});
  spec["encoding"] = {{"x", x}, {"y", y}, {"tooltip", tooltip}};
  spec["layer"] = json::array(
      {{{"transform", json::array({{{"filter", "datum.kind === 'finite'"}}})},
        {"mark", "rect"},
        {"encoding", {{"color", {{"field", "grad_norm"}, {"type", "quantitative"}, {"title", "|grad|"},
                                  {"scale", {{"type", "log"}, {"scheme", "viridis"}}},
                                  {"legend", {{"format", ".0e"}}}}}}}},
       {{"transform", json::array({{{"filter", "datum.kind !== 'finite'"}}})},
        {"mark", "rect"},
        {"encoding", {{"fill", {{"field", "kind"}, {"type", "nominal"}, {"title", "not plotted"},
                                 {"scale", {{"domain", {"zero", "NaN", "Inf"}},
                                            {"range", {theme::kZeroCell, theme::kNaNCell, theme::kInfCell}}}}}}}}}});
  out.add("gradient-flow", "Gradient flow", spec);
}

void module_flow(const HtmlReportInput& in, Charts& out) {
  // |output gradient| where the audit measured it; a run with parameter gradients only (e.g.
  // records written by hand) shows those instead, and says so.
  bool any_output_grad = false;
  for (const NodeReport& n : in.report->nodes) any_output_grad |= n.out_grad_l2 > 0 && std::isfinite(n.out_grad_l2);
  json values = json::array();
  int order = 0;
  for (const NodeReport& n : in.report->nodes) {
    ++order;
    const double v = any_output_grad ? n.out_grad_l2 : n.param_grad_l2;
    if (!(v > 0) || !std::isfinite(v)) continue;
    values.push_back({{"order", order}, {"node", n.node}, {"out_grad_l2", v},
                      {"flags", n.flags_label()}, {"health", theme::health_class(n)}});
  }
  const std::string what = any_output_grad ? "output gradient" : "parameter gradient (no output gradients recorded)";
  json spec = base("Module flow",
                   "mean |" + what + "| (L2) per node, in execution order; a drop of several "
                   "decades between neighbours is where the gradient stops flowing");
  spec["data"] = {{"values", values}};
  const json x = {{"field", "node"}, {"type", "ordinal"}, {"scale", {{"domain", node_order(*in.report)}}}, {"title", nullptr},
                  {"axis", {{"labelAngle", -30}, {"labelLimit", 160}}}};
  const json y = {{"field", "out_grad_l2"}, {"type", "quantitative"}, {"scale", {{"type", "log"}}},
                  {"title", "|output gradient|"}, {"axis", {{"format", ".0e"}}}};
  spec["encoding"] = {{"x", x}, {"y", y},
                      {"tooltip", json::array({{{"field", "node"}}, {{"field", "out_grad_l2"}, {"format", ".3e"}},
                                               {{"field", "flags"}}})}};
  spec["layer"] = json::array(
      {{{"mark", {{"type", "line"}, {"interpolate", "step"}, {"color", theme::kLine}}}},
       {{"mark", {{"type", "point"}, {"filled", true}, {"size", 90}}},
        {"encoding", {{"color", theme::health_encoding()}}}}});
  out.add("module-flow", "Module flow", spec);
}

// Boxes in execution order, left to right, wrapping every kPerRow nodes, joined by arrows.
void node_diagram(const HtmlReportInput& in, Charts& out) {
  constexpr int kPerRow = 5;
  const auto& nodes = in.report->nodes;
  json boxes = json::array(), links = json::array();
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const int col = static_cast<int>(i % kPerRow), row = static_cast<int>(i / kPerRow);
    const std::string flags = nodes[i].flags_label(" ");
    boxes.push_back({{"node", nodes[i].node}, {"x", col}, {"y", row}, {"x0", col - 0.42}, {"x1", col + 0.42},
                     {"y0", row - 0.3}, {"y1", row + 0.3}, {"flags", flags},
                     {"label", json::array({nodes[i].node, flags})}, {"health", theme::health_class(nodes[i])}});
    if (i + 1 < nodes.size()) {
      const int ncol = static_cast<int>((i + 1) % kPerRow), nrow = static_cast<int>((i + 1) / kPerRow);
      links.push_back({{"x", col + (nrow == row ? 0.42 : 0)}, {"y", row + (nrow == row ? 0 : 0.3)},
                       {"x2", ncol - (nrow == row ? 0.42 : 0)}, {"y2", nrow - (nrow == row ? 0 : 0.3)}});
    }
  }
  const int rows = static_cast<int>((nodes.size() + kPerRow - 1) / kPerRow);
  json spec = base("Nodes", "execution order, coloured by the worst flag");
  spec["height"] = std::max(1, rows) * 80;
  const json xs = {{"type", "linear"}, {"domain", {-0.5, kPerRow - 0.5}}};
  const json ys = {{"type", "linear"}, {"domain", {-0.5, std::max(1, rows) - 0.5}}, {"reverse", true}};
  const json none = nullptr;
  auto axis_x = [&](const char* f) { return json{{"field", f}, {"type", "quantitative"}, {"scale", xs}, {"axis", none}}; };
  auto axis_y = [&](const char* f) { return json{{"field", f}, {"type", "quantitative"}, {"scale", ys}, {"axis", none}}; };
  spec["layer"] = json::array(
      {{{"data", {{"values", links}}},
        {"mark", {{"type", "rule"}, {"color", theme::kLine}, {"strokeWidth", 1.5}}},
        {"encoding", {{"x", axis_x("x")}, {"y", axis_y("y")}, {"x2", {{"field", "x2"}}}, {"y2", {{"field", "y2"}}}}}},
       {{"data", {{"values", boxes}}},
        {"layer", json::array(
            {{{"mark", {{"type", "rect"}, {"cornerRadius", 6}, {"opacity", 0.9}}},
              {"encoding", {{"x", axis_x("x0")}, {"x2", {{"field", "x1"}}}, {"y", axis_y("y0")}, {"y2", {{"field", "y1"}}},
                            {"color", theme::health_encoding()},
                            {"tooltip", json::array({{{"field", "node"}}, {{"field", "flags"}}})}}}},
             {{"mark", {{"type", "text"}, {"color", "white"}, {"fontSize", 11}, {"limit", 130}}},
              {"encoding", {{"x", axis_x("x")}, {"y", axis_y("y")}, {"text", {{"field", "label"}}}}}}})}}});
  out.add("node-diagram", "Nodes", spec);
}

// One line per node over steps; `values` rows are {node, step, value[, measure]}.
json series_spec(const std::string& title, const std::string& subtitle, json values, const json& y,
                 const Report& report) {
  json spec = base(title, subtitle);
  spec["data"] = {{"values", std::move(values)}};
  spec["params"] = legend_pick();
  spec["mark"] = {{"type", "line"}, {"strokeWidth", 1.5}};
  spec["encoding"] = {{"x", {{"field", "step"}, {"type", "quantitative"}}},
                      {"y", y},
                      {"color", {{"field", "node"}, {"type", "nominal"}, {"scale", {{"domain", node_order(report)}}}}},
                      {"opacity", picked_opacity()},
                      {"tooltip", json::array({{{"field", "node"}}, {{"field", "step"}}, {{"field", "value"}, {"format", ".3e"}}})}};
  return spec;
}

void node_series(const HtmlReportInput& in, Charts& out) {
  json grad = json::array(), act = json::array(), update = json::array();
  for (const NodeSeries& n : *in.series) {
    for (const SeriesPoint& p : n.points) {
      if (p.grad_norm > 0 && std::isfinite(p.grad_norm))
        grad.push_back({{"node", n.node}, {"step", p.step}, {"value", p.grad_norm}});
      if (p.update_ratio > 0 && std::isfinite(p.update_ratio))
        update.push_back({{"node", n.node}, {"step", p.step}, {"value", p.update_ratio}});
      const std::pair<const char*, double> measures[] = {{"mean |x|", p.act_mean_abs}, {"std", p.act_std},
                                                         {"zero fraction", p.act_zero_frac},
                                                         {"saturated fraction", p.act_saturated_frac}};
      for (const auto& [measure, v] : measures)
        if (std::isfinite(v)) act.push_back({{"node", n.node}, {"step", p.step}, {"measure", measure}, {"value", v}});
    }
  }
  const json log_y = {{"field", "value"}, {"type", "quantitative"}, {"scale", {{"type", "log"}}}, {"axis", {{"format", ".0e"}}}};
  json g = series_spec("Gradient norm", "L2 per node and step (log); click a legend entry to pick nodes", grad,
                       log_y, *in.report);
  g["encoding"]["y"]["title"] = "|grad|";
  if (in.report->nonfinite_origin.found()) {  // the lines stop where NaN/Inf begin: say so
    const int64_t step = in.report->nonfinite_origin.step;
    json line = {{"mark", g["mark"]}, {"params", g["params"]}, {"encoding", g["encoding"]}};
    for (const char* key : {"mark", "params", "encoding"}) g.erase(key);
    json rule = {{"data", {{"values", json::array({{{"step", step}, {"label", "non-finite from step " + std::to_string(step)}}})}}},
                 {"encoding", {{"x", {{"field", "step"}, {"type", "quantitative"}}}}},
                 {"layer", json::array({{{"mark", {{"type", "rule"}, {"color", theme::kNaNCell}, {"strokeWidth", 2}}}},
                                        {{"mark", {{"type", "text"}, {"align", "left"}, {"dx", 4}, {"dy", -4},
                                                   {"baseline", "top"}, {"color", theme::kNaNCell}}},
                                         {"encoding", {{"text", {{"field", "label"}}}, {"y", {{"value", 0}}}}}}})}};
    g["layer"] = json::array({line, rule});
  }
  out.add("gradient-norm", "Gradient norm", g);

  // Faceted by measure, each with its own y scale (Vega-Lite moves data out of the inner spec).
  json facet = base("Activations", "mean |x|, std, fraction of zeros (|x| <= dead_eps) and of saturated values, per node and step");
  facet.erase("width");
  facet["data"] = {{"values", std::move(act)}};
  facet["facet"] = {{"row", {{"field", "measure"}, {"type", "nominal"}, {"title", nullptr},
                             {"sort", {"mean |x|", "std", "zero fraction", "saturated fraction"}}}}};
  facet["spec"] = {{"width", kWidth}, {"height", 110}, {"mark", {{"type", "line"}, {"strokeWidth", 1.5}}},
                   {"encoding", {{"x", {{"field", "step"}, {"type", "quantitative"}}},
                                 {"y", {{"field", "value"}, {"type", "quantitative"}, {"title", nullptr}}},
                                 {"color", {{"field", "node"}, {"type", "nominal"}, {"scale", {{"domain", node_order(*in.report)}}}}},
                                 {"tooltip", json::array({{{"field", "node"}}, {{"field", "step"}}, {{"field", "measure"}},
                                                          {{"field", "value"}, {"format", ".3g"}}})}}}};
  facet["resolve"] = {{"scale", {{"y", "independent"}}}};
  out.add("activations", "Activations", facet);

  json u = series_spec("Update ratio", "||actual parameter change|| / ||parameters|| per step (log); dashed: update_ratio_lo",
                       update, log_y, *in.report);
  u["encoding"]["y"]["title"] = "update / param";
  // The threshold rule gets its own data and encoding; the lines keep theirs in their layer.
  json line = {{"mark", u["mark"]}, {"params", u["params"]}, {"encoding", u["encoding"]}};
  for (const char* key : {"mark", "params", "encoding"}) u.erase(key);
  json rule = {{"data", {{"values", json::array({{{"threshold", in.report->thresholds.update_ratio_lo}}})}}},
               {"mark", {{"type", "rule"}, {"strokeDash", {4, 4}}, {"color", theme::kThreshold}}},
               {"encoding", {{"y", {{"field", "threshold"}, {"type", "quantitative"}}}}}};
  u["layer"] = json::array({line, rule});
  out.add("update-ratio", "Update ratio", u);
}

// The attention findings of the report, one line each, for a chart's subtitle.
json attention_findings(const Report& report) {
  json lines = json::array();
  for (const NodeReport& n : report.nodes)
    for (const Evidence& e : n.evidence)
      if (raised_per_head(e.flag))
        lines.push_back(n.node + ": " + flag_name(e.flag) + " since step " + std::to_string(e.first_step) + " (" +
                        e.detail + ")");
  return lines;
}

// Entropy per head over steps (a heatmap; cells below attention_entropy_floor outlined) and the
// largest logit per node (the largest over its heads) against attention_logit_hi.
void attention_charts(const HtmlReportInput& in, Charts& out) {
  json cells = json::array(), largest = json::array(), rows = json::array();
  for (const AttentionRecord& a : *in.attention) {
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t h = 0; h < a.heads.size(); ++h) {
      const HeadStats& s = a.heads[h];
      if (s.queries == 0) continue;
      const std::string row = a.node + " · head " + std::to_string(h);
      if (rows.empty() || std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
      top = std::max(top, s.max_logit);
      cells.push_back({{"row", row}, {"node", a.node}, {"step", a.step}, {"entropy fraction", number(s.mean_entropy_fraction())},
                       {"one-key queries", number(s.top_fraction())}, {"largest logit", number(s.max_logit)}});
    }
    if (std::isfinite(top)) largest.push_back({{"node", a.node}, {"step", a.step}, {"value", top}});
  }
  const Thresholds& t = in.report->thresholds;
  json subtitle = json::array({"mean attention entropy / log(keys seen) per head and measured step (1: uniform, 0: "
                               "one key); outlined: below attention_entropy_floor " + format_measure(t.attention_entropy_floor)});
  for (const json& line : attention_findings(*in.report)) subtitle.push_back(line);
  json heat = base("Attention entropy", "");
  heat["title"]["subtitle"] = subtitle;
  heat["data"] = {{"values", cells}};
  const json x = {{"field", "step"}, {"type", "ordinal"}, {"axis", {{"labelOverlap", true}}}};
  const json y = {{"field", "row"}, {"type", "nominal"}, {"title", nullptr}, {"scale", {{"domain", rows}}}};
  const json tooltip = json::array({{{"field", "row"}}, {{"field", "step"}}, {{"field", "entropy fraction"}, {"format", ".3f"}},
                                    {{"field", "one-key queries"}, {"format", ".1%"}}, {{"field", "largest logit"}, {"format", ".3g"}}});
  heat["layer"] = json::array(
      {{{"mark", "rect"},
        {"encoding", {{"x", x}, {"y", y}, {"tooltip", tooltip},
                      {"color", {{"field", "entropy fraction"}, {"type", "quantitative"},
                                 {"scale", {{"domain", {0, 1}}, {"scheme", "viridis"}}}}}}}},
       {{"transform", json::array({{{"filter", {{"field", "entropy fraction"}, {"lt", t.attention_entropy_floor}}}}})},
        {"mark", {{"type", "rect"}, {"fillOpacity", 0}, {"stroke", theme::kNaNCell}, {"strokeWidth", 1.5}}},
        {"encoding", {{"x", x}, {"y", y}}}}});
  out.add("attention-entropy", "Attention entropy", heat);

  json logit = series_spec("Largest attention logit",
                           "the largest pre-softmax logit over a node's heads per measured step (log); dashed: "
                           "attention_logit_hi",
                           largest, {{"field", "value"}, {"type", "quantitative"}, {"scale", {{"type", "log"}}}, {"title", "logit"}},
                           *in.report);
  json line = {{"mark", logit["mark"]}, {"params", logit["params"]}, {"encoding", logit["encoding"]}};
  for (const char* key : {"mark", "params", "encoding"}) logit.erase(key);
  json rule = {{"data", {{"values", json::array({{{"threshold", t.attention_logit_hi}}})}}},
               {"mark", {{"type", "rule"}, {"strokeDash", {4, 4}}, {"color", theme::kThreshold}}},
               {"encoding", {{"y", {{"field", "threshold"}, {"type", "quantitative"}}}}}};
  logit["layer"] = json::array({line, rule});
  out.add("attention-logit", "Largest attention logit", logit);
}

// Bars over [edges[i], edges[i+1]), for the bins whose edges are there: a loaded histogram is
// checked, but one built in code may pair bins with too few edges (or none).
json histogram_values(const Histogram& h) {
  json values = json::array();
  const std::size_t bins = h.edges.empty() ? 0 : std::min(h.counts.size(), h.edges.size() - 1);
  for (std::size_t i = 0; i < bins; ++i)
    values.push_back({{"lo", number(h.edges[i])}, {"hi", number(h.edges[i + 1])}, {"rows", h.counts[i]}});
  return values;
}

json histogram_spec(const std::string& title, const std::string& subtitle, const Histogram& h, bool log_x,
                    const std::string& x_title) {
  json spec = base(title, subtitle);
  spec["width"] = kWidth / 2 - 40;
  spec["height"] = 180;
  spec["data"] = {{"values", histogram_values(h)}};
  spec["mark"] = {{"type", "rect"}, {"color", theme::kBar}, {"stroke", "white"}, {"strokeWidth", 0.5}};
  json x = {{"field", "lo"}, {"type", "quantitative"}, {"title", x_title}};
  if (log_x) x["scale"] = {{"type", "log"}}, x["axis"] = {{"format", ".0e"}};
  spec["encoding"] = {{"x", x}, {"x2", {{"field", "hi"}}},
                      {"y", {{"field", "rows"}, {"type", "quantitative"}, {"title", "rows"}}},
                      {"tooltip", json::array({{{"field", "lo"}, {"format", ".3g"}}, {{"field", "hi"}, {"format", ".3g"}},
                                               {{"field", "rows"}}})}};
  return spec;
}

std::string fixed(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

void embedding_charts(const EmbeddingRunSummary& summary, const Thresholds& t, Charts& out) {
  for (std::size_t i = 0; i < summary.tables.size(); ++i) {
    const EmbeddingProfile& p = summary.tables[i].profile;
    const std::string id = "embedding-" + std::to_string(i) + "-";
    const std::string of = " (" + p.layer + ")";
    json lorenz = json::array();
    for (const auto& [rows, exposure] : p.lorenz) lorenz.push_back({{"rows", rows}, {"exposure", exposure}});
    json l = base("Exposure Lorenz curve" + of, "Gini " + fixed(p.popularity_gini, 3) + " over " +
                  std::to_string(p.exposed_rows) + " exposed of " + std::to_string(p.num_embeddings) +
                  " rows; the diagonal is equal exposure");
    l["width"] = kWidth / 2 - 40;
    l["height"] = 180;
    const json sx = {{"field", "rows"}, {"type", "quantitative"}, {"title", "share of rows (least exposed first)"}};
    const json sy = {{"field", "exposure"}, {"type", "quantitative"}, {"title", "share of exposures"}};
    l["layer"] = json::array(
        {{{"data", {{"values", json::array({{{"rows", 0}, {"exposure", 0}}, {{"rows", 1}, {"exposure", 1}}})}}},
          {"mark", {{"type", "line"}, {"strokeDash", {4, 4}}, {"color", theme::kThreshold}}},
          {"encoding", {{"x", sx}, {"y", sy}}}},
         {{"data", {{"values", lorenz}}},
          {"mark", {{"type", "area"}, {"line", true}, {"opacity", 0.3}, {"color", theme::kBar}}},
          {"encoding", {{"x", sx}, {"y", sy}}}}});
    out.add(id + "lorenz", "Exposure Lorenz curve" + of, l);
    out.add(id + "exposure", "Exposure" + of,
            histogram_spec("Exposure" + of, "rows by the number of steps they were in the batch", p.exposure,
                           true, "exposure (steps)"));
    std::string vsub = "velocity EMA of each exposed row's real update (log)";
    if (p.velocity.below > 0) vsub += "; " + std::to_string(p.velocity.below) + " rows with velocity 0 not shown";
    out.add(id + "velocity", "Velocity" + of, histogram_spec("Velocity" + of, vsub, p.velocity, true, "velocity"));
    json o = histogram_spec("Oscillation" + of,
                            "EMA of the cosine between successive updates; dashed: zombie threshold " +
                                fixed(t.zombie_oscillation, 2),
                            p.oscillation, false, "oscillation");
    json bars = {{"mark", o["mark"]}, {"encoding", o["encoding"]}};
    o.erase("mark");
    o.erase("encoding");
    json rule = {{"data", {{"values", json::array({{{"threshold", t.zombie_oscillation}}})}}},
                 {"mark", {{"type", "rule"}, {"strokeDash", {4, 4}}, {"color", theme::kThreshold}}},
                 {"encoding", {{"x", {{"field", "threshold"}, {"type", "quantitative"}}}}}};
    o["layer"] = json::array({bars, rule});
    out.add(id + "oscillation", "Oscillation" + of, o);
  }
}

// Held-out accuracy against bytes as stored, one point per measured variant and a line per
// method through its sizes (the demo measures each method at the size of each uniform
// precision); the dashed line is the FP32 model's accuracy.
void compression_chart(const compress::MeasuredComparison& c, Charts& out) {
  json points = json::array();
  for (const compress::MeasuredPoint& p : c.points)
    points.push_back({{"method", p.method}, {"budget", p.budget}, {"bytes", p.bytes}, {"accuracy", number(p.accuracy)}});
  json spec = base("Accuracy against size", c.model + "; FP32: " + std::to_string(c.fp32_bytes) + " bytes, accuracy " +
                                                fixed(c.fp32_accuracy, 3) + " (dashed)");
  spec["height"] = 260;
  const json x = {{"field", "bytes"}, {"type", "quantitative"}, {"title", "bytes as stored"}};
  const json y = {{"field", "accuracy"}, {"type", "quantitative"}, {"title", "held-out accuracy"}, {"scale", {{"zero", false}}}};
  spec["layer"] = json::array(
      {{{"data", {{"values", points}}},
        {"mark", {{"type", "line"}, {"opacity", 0.5}}},
        {"encoding",
         {{"x", x}, {"y", y}, {"color", {{"field", "method"}, {"type", "nominal"}}},
          {"order", {{"field", "bytes"}, {"type", "quantitative"}}}}}},
       {{"data", {{"values", points}}},
        {"mark", {{"type", "point"}, {"filled", true}, {"size", 90}}},
        {"encoding",
         {{"x", x}, {"y", y}, {"color", {{"field", "method"}, {"type", "nominal"}}},
          {"shape", {{"field", "budget"}, {"type", "nominal"}}},
          {"tooltip", json::array({{{"field", "method"}}, {{"field", "budget"}}, {{"field", "bytes"}}, {{"field", "accuracy"}}})}}}},
       {{"data", {{"values", json::array({{{"accuracy", number(c.fp32_accuracy)}}})}}},
        {"mark", {{"type", "rule"}, {"strokeDash", {4, 4}}, {"color", theme::kThreshold}}},
        {"encoding", {{"y", {{"field", "accuracy"}, {"type", "quantitative"}}}}}}});
  out.add("compression", "Accuracy against size", spec);
}

}  // namespace

std::vector<Chart> build_charts(const HtmlReportInput& in) {
  if (!in.meta || !in.report || !in.timeline || !in.flow || !in.series)
    throw Error("html: the report needs the run's metadata, report, timeline, flow summary and series");
  if (in.trees) return internal::tree_charts(*in.trees);  // rounds, not gradients
  Charts charts;
  gradient_flow(in, charts);
  module_flow(in, charts);
  node_diagram(in, charts);
  node_series(in, charts);
  if (internal::has_loss_section(in))
    for (Chart& c : internal::loss_charts(in.scalars ? *in.scalars : std::vector<StepScalar>{}, *in.report, in.beside,
                                          in.meta->name.empty() ? in.run_path : in.meta->name))
      charts.list.push_back(std::move(c));
  if (in.attention && !in.attention->empty()) attention_charts(in, charts);
  if (in.embedding) embedding_charts(*in.embedding, in.meta->thresholds, charts);
  if (in.compression && !in.compression->points.empty()) compression_chart(*in.compression, charts);
  return std::move(charts.list);
}

}  // namespace gradscope
