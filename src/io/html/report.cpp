// The HTML page around the charts: summary, recommendations, node table, embedding findings.
// Strings from the run reach the page only through html_escape (text and attributes) or
// json_for_script (the chart data).
#include "gradscope/io/html/report.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <random>

#include "gradscope/core/error.h"
#include "gradscope/io/render/findings_json.h"
#include "gradscope/io/render/run_report.h"
#include "gradscope/io/render/table.h"
#include "gradscope/version.h"
#include "html/internal/loss.h"
#include "html/internal/theme.h"
#include "html/internal/model.h"
#include "html/internal/trees.h"

namespace gradscope {
namespace {

std::string esc(std::string_view s) { return html_escape(s); }

// A fresh nonce per page: the Content-Security-Policy runs only scripts that carry it.
std::string make_nonce() {
  std::random_device rd;
  return fmt::format("{:08x}{:08x}{:08x}{:08x}", rd(), rd(), rd(), rd());
}

constexpr const char* kStyle = R"css(
:root { --fg: #1f2933; --muted: #616e7c; --line: #d9e2ec; --bg: #ffffff; --panel: #f5f7fa; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1180px; padding: 24px 32px 48px; color: var(--fg);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; background: var(--bg); }
h1 { font-size: 22px; margin: 0 0 6px; word-break: break-all; }
h2 { font-size: 17px; margin: 32px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 22px 0 8px; word-break: break-all; }
.verdict { display: inline-block; padding: 6px 12px; border-radius: 6px; color: #fff; font-weight: 600;
           word-break: break-all; }
.verdict.ok { background: #2e7d32; } .verdict.bad { background: #c62828; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; margin: 12px 0 0;
          color: var(--muted); }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; word-break: break-all; }
code, .mono { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 12.5px; }
ul.advice { padding-left: 20px; } ul.advice li { margin: 6px 0; } ul.advice ul { padding-left: 18px; }
details summary { cursor: pointer; color: var(--muted); margin: 8px 0; }
.chart { margin: 14px 0 22px; min-height: 40px; }
.grid { display: grid; grid-template-columns: 1fr 1fr; gap: 0 24px; }
table#nodes, table.stats { border-collapse: collapse; width: 100%; font-size: 13px; }
table#nodes th, table#nodes td, table.stats td, table.stats th { border-bottom: 1px solid var(--line);
  padding: 5px 8px; text-align: left; vertical-align: top; }
table#nodes td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table#nodes td.node { overflow-wrap: anywhere; min-width: 90px; }
.note { color: var(--muted); font-style: italic; }
table#nodes th { background: var(--panel); position: sticky; top: 0; }
.flag { display: inline-block; padding: 1px 6px; margin: 1px 2px 1px 0; border-radius: 4px; color: #fff;
        font-size: 12px; font-weight: 600; }
.flag.healthy { background: #2e7d32; } .flag.warning { background: #ef6c00; }
.flag.failing { background: #c62828; } .flag.inactive { background: #757575; }
.evidence { color: var(--muted); font-size: 12.5px; }
footer { margin-top: 40px; color: var(--muted); font-size: 12px; }
.vega-embed { width: 100%; }
)css";

// Starts vega-embed on every [data-chart] element and reports the outcome on <html>.
constexpr const char* kDriver = R"js(
(function () {
  var root = document.documentElement;
  try {
    var specs = JSON.parse(document.getElementById('gradscope-charts').textContent);
    var jobs = Array.prototype.map.call(document.querySelectorAll('[data-chart]'), function (el) {
      var name = el.getAttribute('data-chart');
      if (!specs[name]) return Promise.reject(new Error('no spec for chart ' + name));
      return vegaEmbed(el, specs[name], { renderer: 'svg', actions: false });
    });
    Promise.all(jobs).then(function () { root.dataset.gradscope = 'rendered'; }, function (e) {
      root.dataset.gradscope = 'error: ' + (e && e.message ? e.message : String(e));
      console.error('gradscope: a chart failed to render:', e);
    });
  } catch (e) {
    root.dataset.gradscope = 'error: ' + e.message;
    console.error('gradscope:', e);
  }
})();
)js";

std::string flag_badges(const NodeReport& n) {
  std::string out;
  const char* cls = theme::health_class(n);
  for (Flag f : n.flags.list()) {
    const bool healthy = f == Flag::kHealthy;
    out += fmt::format("<span class=\"flag {}\">{}</span>", healthy ? "healthy" : cls, flag_name(f));
  }
  return out;
}

std::string node_table(const Report& report) {
  std::string out =
      "<table id=\"nodes\"><thead><tr><th>node</th><th>flags</th><th>steps</th><th>act |mean|</th>"
      "<th>act std</th><th>|out grad|</th><th>|param grad|</th><th>|param|</th><th>update ratio</th>"
      "<th>evidence</th></tr></thead><tbody>\n";
  for (const NodeReport& n : report.nodes) {
    std::string evidence;
    for (const Evidence& e : n.evidence) evidence += "<div>" + esc(describe_evidence(e)) + "</div>";
    out += fmt::format(
        "<tr><td class=\"node mono\">{}</td><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td>"
        "<td class=\"num\">{}</td><td class=\"evidence\">{}</td></tr>\n",
        esc(n.node), flag_badges(n), n.steps, format_measure(n.act_mean_abs), format_measure(n.act_std),
        format_measure(n.out_grad_l2), format_measure(n.param_grad_l2), format_measure(n.param_l2),
        format_measure(n.update_ratio), evidence);
  }
  return out + "</tbody></table>\n";
}

// One finding as the JSON holds it (core/findings/findings.h): what it implies, what to do,
// confidence and the premise with its measured numbers. Nothing here is recomputed.
std::string finding_item(const Finding& f) {
  return fmt::format("<li>{} What to do: {} <span class=\"evidence\">({} confidence)</span>"
                     "<div class=\"evidence\">{}</div></li>\n",
                     esc(f.implies), esc(f.action), confidence_name(f.confidence), esc(f.premise));
}

// What to do: the run's findings (render/findings_json.h's run_findings, the JSON's "findings"):
// the worst flagged nodes with their flags' findings (the rest are in the node table), the
// gradient flow's, each embedding table's and the trees'. The per-node gradient-flow
// recommendations fold away (they repeat the node findings).
std::string recommendations(const Report& report, const FlowSummary& flow,
                            const EmbeddingRunSummary* embedding, const TreeRunSummary* trees) {
  constexpr std::size_t kShown = 3;
  const std::vector<Finding> findings = run_findings(report, flow, embedding, trees);
  const std::vector<const NodeReport*> flagged = report.flagged_worst_first();
  std::string items;
  for (std::size_t i = 0; i < flagged.size() && i < kShown; ++i) {
    const NodeReport& n = *flagged[i];
    items += "<li><b class=\"mono\">" + esc(n.node) + "</b> " + flag_badges(n) + "<ul>\n";
    for (const Finding& f : findings)
      if (f.kind == FindingKind::kModule && f.node == n.node) items += finding_item(f);
    items += "</ul></li>\n";
  }
  if (flagged.size() > kShown)
    items += fmt::format("<li>{} more flagged node{} in the <a href=\"#nodes-section\">node table</a>.</li>\n",
                         flagged.size() - kShown, flagged.size() - kShown == 1 ? "" : "s");
  for (const Finding& f : findings) {
    if (f.kind == FindingKind::kModule) continue;
    const std::string where = f.node.empty() ? "" : "<b class=\"mono\">" + esc(f.node) + "</b> ";
    const std::string since =
        f.kind == FindingKind::kTrees && f.since_step >= 0 ? fmt::format(" from round {}", f.since_step) : "";
    items += fmt::format("<li>{}<span class=\"flag failing\">{}{}</span><ul>{}</ul></li>\n", where,
                         esc(f.type), since, finding_item(f));
  }
  const bool embedding_findings = !embedding_verdict(embedding).empty();
  std::string out;
  if (trees && flagged.empty())
    out += trees->report.findings.empty() ? "<p>No tree finding.</p>\n" : "";
  else if (flagged.empty())
    out += embedding_findings ? "<p>No node is flagged by the gradient rules; the embedding tables have findings.</p>\n"
                              : "<p>No node is flagged.</p>\n";
  if (!items.empty()) out += "<ul class=\"advice\">\n" + items + "</ul>\n";
  if (!flow.recommendations.empty() && !trees) {  // a tree run records no gradients
    out += fmt::format("<details><summary>Gradient flow: {} ({} recommendation{})</summary><ul class=\"advice\">\n",
                       flow_health_name(flow.health), flow.recommendations.size(),
                       flow.recommendations.size() == 1 ? "" : "s");
    for (const std::string& r : flow.recommendations) out += "<li>" + esc(r) + "</li>\n";
    out += "</ul></details>\n";
  }
  return out;
}

std::string chart_div(const Chart& c) {
  return fmt::format("<div class=\"chart\" data-chart=\"{}\" aria-label=\"{}\"></div>\n", esc(c.name), esc(c.title));
}

std::string fixed(double v, const char* fmt_spec) {
  return std::isfinite(v) ? fmt::format(fmt::runtime(fmt_spec), v) : std::string("-");
}

// Every row a finding names (ZOMBIE_ROWS: every flagged row), folded; the first kShownRows ids,
// the rest in the run's JSON.
std::string listed_rows(const EmbeddingDiagnostic& d) {
  constexpr std::size_t kShownRows = 2000;
  if (d.rows.empty()) return {};
  std::string ids;
  for (std::size_t i = 0; i < std::min(kShownRows, d.rows.size()); ++i) ids += (i ? ", " : "") + std::to_string(d.rows[i]);
  if (d.rows.size() > kShownRows)
    ids += " and " + std::to_string(d.rows.size() - kShownRows) + " more (gradscope report --json lists them)";
  return "<details><summary>" + esc(d.type) + ": the " + std::to_string(d.rows.size()) +
         " rows</summary><p class=\"mono\">" + ids + "</p></details>\n";
}

std::string embedding_section(const EmbeddingRunSummary& summary, const std::vector<Chart>& charts) {
  std::string out = "<section id=\"embedding\"><h2>Embedding tables</h2>\n";
  for (std::size_t i = 0; i < summary.tables.size(); ++i) {
    const EmbeddingReport& r = summary.tables[i].report;
    const EmbeddingStats& s = r.stats;
    out += "<h3 class=\"mono\">" + esc(r.layer) + "</h3>\n<table class=\"stats\"><tr>";
    const std::pair<const char*, std::string> cells[] = {
        {"rows", std::to_string(s.num_embeddings)},   {"dim", std::to_string(s.dim)},
        {"tracked steps", std::to_string(s.tracked_steps)},
        {"active coverage", fixed(s.active_coverage_pct, "{:.1f}%")},
        {"lookup Gini", s.lookups ? fixed(s.lookup_gini, "{:.3f}") : std::string("-")},
        {"per-step Gini", fixed(s.popularity_gini, "{:.3f}")},
        {"exposure entropy", fixed(s.exposure_entropy, "{:.3f}")},
        {"never exposed", std::to_string(s.never_exposed_rows)},
        {"zombie rows", std::to_string(s.zombie_rows) + " of " + std::to_string(s.zombie_rows_judged) + " judged" +
                            (s.zombie_rows_judged_short
                                 ? " (" + std::to_string(s.zombie_rows_judged_short) + " on short windows)"
                                 : std::string()) +
                            (s.zombie_rows_stopped ? ", " + std::to_string(s.zombie_rows_stopped) + " stopped" : std::string()) +
                            (s.zombie_rows_unjudged ? ", " + std::to_string(s.zombie_rows_unjudged) + " with too few updates to judge"
                                                    : std::string())},
        {"negatives' TV (chance)", fixed(s.sampler_tv, "{:.3f}") + " (" + fixed(s.sampler_tv_chance, "{:.3f}") + ")"},
        {"effective rank", s.effective_rank < 0 ? std::string("-") : fixed(s.effective_rank, "{:.1f}")}};
    for (const auto& [k, v] : cells) out += "<th>" + std::string(k) + "</th>";
    out += "</tr><tr>";
    for (const auto& [k, v] : cells) out += "<td class=\"mono\">" + esc(v) + "</td>";
    out += "</tr></table>\n";
    // The table's findings as the JSON has them (core/findings/findings.h): the rule's score and
    // the level.
    const std::vector<Finding> findings = embedding_findings(r);
    if (findings.empty()) out += "<p>No embedding findings.</p>\n";
    else out += "<ul class=\"advice\">\n";
    for (std::size_t k = 0; k < findings.size(); ++k) {
      const Finding& f = findings[k];
      out += fmt::format("<li><b>{}</b> (confidence {}, {}): {}<div class=\"evidence\">{} What to do: {}</div></li>\n",
                         esc(f.type), fixed(r.diagnostics[k].confidence, "{:.2f}"), confidence_name(f.confidence),
                         esc(f.premise), esc(f.implies), esc(f.action));
    }
    if (!findings.empty()) out += "</ul>\n";
    for (const EmbeddingDiagnostic& d : r.diagnostics) out += listed_rows(d);
    out += "<div class=\"grid\">\n";
    const std::string prefix = "embedding-" + std::to_string(i) + "-";
    for (const Chart& c : charts)
      if (c.name.compare(0, prefix.size(), prefix) == 0) out += chart_div(c);
    out += "</div>\n";
  }
  if (!summary.correlations.empty()) {
    out += "<h3>Gradient-norm correlation between tables</h3><ul>\n";
    for (const TowerCorrelation& c : summary.correlations)
      out += fmt::format("<li><span class=\"mono\">{}</span> and <span class=\"mono\">{}</span>: Pearson {} over {} steps</li>\n",
                         esc(c.a), esc(c.b), fixed(c.pearson, "{:.3f}"), c.steps);
    out += "</ul>\n";
  }
  return out + "</section>\n";
}

// Measured compressed variants: the plot and the numbers behind it.
std::string compression_section(const compress::MeasuredComparison& c, const std::vector<Chart>& charts) {
  std::string out = "<section id=\"compression\"><h2>Compression</h2>\n<p>" + esc(c.model) +
                    ": each variant applied to the trained weights and evaluated on held-out data "
                    "(docs/compression.md).</p>\n<table class=\"stats\"><tr><th>variant</th><th>size set by</th>"
                    "<th>bytes</th><th>of FP32</th><th>accuracy</th></tr>\n";
  out += fmt::format("<tr><td class=\"mono\">fp32</td><td></td><td class=\"mono\">{}</td><td class=\"mono\">100%</td>"
                     "<td class=\"mono\">{}</td></tr>\n",
                     c.fp32_bytes, fixed(c.fp32_accuracy, "{:.3f}"));
  for (const compress::MeasuredPoint& p : c.points)
    out += fmt::format("<tr><td class=\"mono\">{}</td><td>{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td>"
                       "<td class=\"mono\">{}</td></tr>\n",
                       esc(p.method), esc(p.budget), p.bytes,
                       c.fp32_bytes > 0 ? fixed(100.0 * static_cast<double>(p.bytes) / static_cast<double>(c.fp32_bytes), "{:.1f}%") : "-",
                       fixed(p.accuracy, "{:.3f}"));
  out += "</table>\n";
  for (const Chart& ch : charts)
    if (ch.name == "compression") out += chart_div(ch);
  return out + "</section>\n";
}

// The chart's container, or a line saying why the run has nothing to draw there.
std::string chart_or_note(const std::vector<Chart>& charts, const std::string& name, const char* missing) {
  for (const Chart& c : charts)
    if (c.name == name) return chart_div(c);
  return std::string("<p class=\"note\">") + missing + "</p>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string json_for_script(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' && (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";  // line terminators in old JS parsers
      i += 2;
    } else {
      out += c;
    }
  }
  return out;
}

std::string script_for_html(std::string_view code) {
  // "<\/script" and "<\!--" mean the same inside JS strings and regular expressions, the only
  // places minified library code can hold them.
  std::string out;
  out.reserve(code.size());
  for (std::size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    out += c;
    if (c != '<' || i + 1 >= code.size()) continue;
    if (code[i + 1] == '/' && code.size() - i >= 8) {
      std::string word(code.substr(i + 2, 6));
      for (char& w : word) w = static_cast<char>(std::tolower(static_cast<unsigned char>(w)));
      if (word == "script") out += '\\';
    } else if (code.substr(i + 1, 3) == "!--") {
      out += '\\';
    }
  }
  return out;
}

std::string render_html(const HtmlReportInput& in, const ChartLibraries& libs) {
  return render_html(in, build_charts(in), libs);
}

std::string render_html(const HtmlReportInput& in, const std::vector<Chart>& charts, const ChartLibraries& libs) {
  if (libs.bundle.empty())
    throw Error("html: the chart libraries (vega, vega-lite, vega-embed) are missing from this build");
  if (!in.meta || !in.report || !in.flow)
    throw Error("html: the report needs the run's metadata, report, timeline, flow summary and series");
  const RunMetadata& meta = *in.meta;
  const Report& report = *in.report;
  const FlowSummary& flow = *in.flow;
  const bool unhealthy = run_unhealthy(report, flow, in.embedding, in.trees);
  const std::string nonce = make_nonce();
  const std::string name = meta.name.empty() ? in.run_path : meta.name;

  std::string page = "<!doctype html>\n<html lang=\"en\" data-gradscope=\"loading\">\n<head>\n<meta charset=\"utf-8\">\n";
  page += fmt::format(
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'nonce-{}' "
      "'unsafe-eval'; style-src 'unsafe-inline'; img-src data:\">\n",
      nonce);
  page += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  page += "<title>gradscope: " + esc(name) + "</title>\n<style>" + std::string(kStyle) + "</style>\n</head>\n<body>\n";

  page += "<header>\n<h1>gradscope report: <span class=\"mono\">" + esc(name) + "</span></h1>\n";
  page += fmt::format("<p class=\"verdict {}\">{}</p>\n", unhealthy ? "bad" : "ok",
                      esc(render_run_verdict(report, flow, in.embedding, in.trees)));
  page += "<dl class=\"meta\">\n";
  const std::pair<const char*, std::string> meta_rows[] = {
      {"run", in.run_path},
      {"started", meta.start_time},
      {"ended",
       meta.end_time.empty() ? "not closed (still running, or its writer stopped)" : meta.end_time},
      {"host", meta.host},
      {"command", meta.command_line},
      {"steps", std::to_string(report.steps)},
      // A tree run has rounds, not gradients: its flow summary would report on nothing.
      in.trees ? std::pair<const char*, std::string>{"boosting rounds",
                                                     std::to_string(in.trees->report.rounds)}
               : std::pair<const char*, std::string>{
                     "gradient flow", std::string(flow_health_name(flow.health)) +
                                          fmt::format(" ({} of {} frames with an issue)",
                                                      flow.issue_frames, flow.frames)}};
  for (const auto& [k, v] : meta_rows)
    page += "<dt>" + std::string(k) + "</dt><dd class=\"mono\">" + esc(v) + "</dd>\n";
  page += "</dl>\n</header>\n";

  page += "<section id=\"summary\"><h2>What to do</h2>\n" +
          recommendations(report, flow, in.embedding, in.trees);
  const NonFiniteOrigin& o = report.nonfinite_origin;
  if (o.found())
    page += fmt::format("<p>Non-finite values first appeared at step {} in <b class=\"mono\">{}</b> ({}, {}).</p>\n",
                        o.step, esc(o.node), esc(o.phase), site_name(o.site));
  // The loss scaler's finding is one of run_findings(), listed by recommendations() above.
  page += "</section>\n";

  constexpr const char* kNoGradients = "No finite, non-zero gradient recorded for this chart.";
  if (in.trees) {  // a tree run records rounds: gradient charts would only say "nothing to draw"
    page += internal::tree_section(*in.trees, charts);
  } else {
    page += "<section id=\"flow\"><h2>Gradient flow</h2>\n" +
            chart_or_note(charts, "gradient-flow", kNoGradients) +
            chart_or_note(charts, "module-flow", kNoGradients) +
            chart_or_note(charts, "node-diagram", "No nodes recorded.") + "</section>\n";
    page += "<section id=\"nodes-section\"><h2>Nodes</h2>\n" + node_table(report) + "</section>\n";
    page += "<section id=\"series\"><h2>Over steps</h2>\n" +
            chart_or_note(charts, "gradient-norm", kNoGradients) +
            chart_or_note(charts, "activations", "No activations recorded.") +
            chart_or_note(charts, "update-ratio", "No parameter updates recorded.") +
            "</section>\n";
    if (internal::has_loss_section(in))
      page += "<section id=\"loss\"><h2>Loss</h2>\n" +
              (in.beside ? "<p>Drawn beside it: <b class=\"mono\">" + esc(in.beside->name) + "</b>, " +
                               esc(in.beside->verdict) + "</p>\n"
                         : std::string()) +
              chart_or_note(charts, "loss", "No loss was handed to the audit (audit.step(opt, loss=...)).") +
              chart_or_note(charts, "grad-norm", "No gradient norm before clipping was recorded (audit.clip_grad_norm_).") +
              "</section>\n";
    if (in.attention && !in.attention->empty())
      page += "<section id=\"attention\"><h2>Attention</h2>\n" +
              chart_or_note(charts, "attention-entropy", "No attention head had a query to measure.") +
              chart_or_note(charts, "attention-logit", "No attention head had a query to measure.") + "</section>\n";
  }
  if (in.architecture || in.warnings)
    page += internal::model_section(in.architecture ? *in.architecture : Architecture{},
                                    in.warnings ? *in.warnings : std::vector<std::string>{});
  if (in.embedding && !in.embedding->tables.empty()) page += embedding_section(*in.embedding, charts);
  if (in.compression && !in.compression->points.empty()) page += compression_section(*in.compression, charts);

  page += fmt::format("<footer>gradscope {} &middot; charts: {} &middot; thresholds: grad_lo {}, grad_hi {}, dead_frac {}</footer>\n",
                      esc(kVersion), esc(libs.versions), format_measure(report.thresholds.grad_lo),
                      format_measure(report.thresholds.grad_hi), format_measure(report.thresholds.dead_frac));

  std::string specs = "{";
  for (std::size_t i = 0; i < charts.size(); ++i)
    specs += (i ? ",\"" : "\"") + charts[i].name + "\":" + charts[i].spec;  // names are [a-z0-9-]
  specs += "}";
  page += "<script nonce=\"" + nonce + "\">" + script_for_html(libs.bundle) + "</script>\n";
  page += "<script type=\"application/json\" id=\"gradscope-charts\">" + json_for_script(specs) + "</script>\n";
  page += "<script nonce=\"" + nonce + "\">" + std::string(kDriver) + "</script>\n</body>\n</html>\n";
  return page;
}

}  // namespace gradscope
