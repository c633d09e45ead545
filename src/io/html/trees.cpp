// A tree run in the HTML report: charts over rounds and windows, and the section that holds them.
// Every number comes from trees.json as measured; strings from it (feature names, paths,
// objective) reach the page through html_escape or, in chart data, JSON (json_for_script).
#include "html/internal/trees.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "gradscope/io/render/table.h"
#include "gradscope/io/trees/text.h"
#include "html/internal/theme.h"

namespace gradscope::internal {
namespace {

using nlohmann::json;

constexpr const char* kSchema = "https://vega.github.io/schema/vega-lite/v6.json";
constexpr int kWidth = 760;

std::string esc(std::string_view s) { return html_escape(s); }

json spec_base(const std::string& title, const std::string& subtitle) {
  return {{"$schema", kSchema},
          {"title", {{"text", title}, {"subtitle", subtitle}, {"anchor", "start"}}},
          {"width", kWidth},
          {"config", {{"view", {{"stroke", nullptr}}}, {"font", "system-ui, sans-serif"}}}};
}

// ASCII JSON with invalid UTF-8 replaced: feature names are whatever the model file says.
std::string text(const json& spec) {
  return spec.dump(-1, ' ', true, json::error_handler_t::replace);
}

// Dashed vertical rules with a label at `x` values, for rounds the findings name.
json round_rules(const json& marks, const char* field) {
  return {{"data", {{"values", marks}}},
          {"layer",
           json::array(
               {{{"mark", {{"type", "rule"}, {"strokeDash", {4, 4}}, {"color", theme::kFailing}}},
                 {"encoding", {{"x", {{"field", field}, {"type", "quantitative"}}}}}},
                {{"mark",
                  {{"type", "text"},
                   {"align", "left"},
                   {"dx", 4},
                   {"baseline", "top"},
                   {"color", theme::kFailing}}},
                 {"encoding",
                  {{"x", {{"field", field}, {"type", "quantitative"}}},
                   {"y", {{"value", 0}}},
                   {"text", {{"field", "label"}}}}}}})}};
}

void contribution_chart(const TreeRunSummary& s, std::vector<Chart>& out) {
  const TreeDynamicsReport& r = s.report;
  json values = json::array(), marks = json::array();
  for (const RoundDynamics& d : r.per_round) {
    const std::pair<const char*, double> measures[] = {{"mean |round output|", d.contribution},
                                                       {"max |round output|", d.contribution_max},
                                                       {"velocity (W1)", d.velocity},
                                                       {"mean |leaf value|", d.leaf_mean_abs}};
    for (const auto& [measure, v] : measures)
      if (v > 0 && std::isfinite(v))
        values.push_back({{"round", d.round}, {"measure", measure}, {"value", v}});
  }
  if (values.empty()) return;
  for (const TreeFinding& f : r.findings)
    if (!tree_flag_info(f.flag).names_feature && f.first_round >= 0)
      marks.push_back({{"round", f.first_round}, {"label", tree_finding_label(r, f)}});
  json spec =
      spec_base("Round contributions",
                "per round over the reference rows (log): how far the round moves predictions, "
                "how its output distribution moved from the round before, its leaves");
  json lines = {{"data", {{"values", values}}},
                {"mark", {{"type", "line"}, {"strokeWidth", 1.5}}},
                {"encoding",
                 {{"x", {{"field", "round"}, {"type", "quantitative"}}},
                  {"y",
                   {{"field", "value"},
                    {"type", "quantitative"},
                    {"scale", {{"type", "log"}}},
                    {"title", nullptr}}},
                  {"color", {{"field", "measure"}, {"type", "nominal"}}},
                  {"tooltip", json::array({{{"field", "round"}},
                                           {{"field", "measure"}},
                                           {{"field", "value"}, {"format", ".3g"}}})}}}};
  spec["layer"] = json::array({lines});
  if (!marks.empty()) spec["layer"].push_back(round_rules(marks, "round"));
  out.push_back({"tree-contribution", "Round contributions", text(spec)});
}

void loss_chart(const TreeRunSummary& s, std::vector<Chart>& out) {
  const TreeDynamicsReport& r = s.report;
  json values = json::array();
  bool positive = true;
  auto point = [&](int32_t k, const char* set, double v) {
    if (!std::isfinite(v)) return;
    positive = positive && v > 0;
    values.push_back({{"rounds", k}, {"set", set}, {"loss", v}});
  };
  point(0, "training", r.base_train_loss);
  point(0, "validation", r.base_valid_loss);
  for (const RoundDynamics& d : r.per_round) {
    point(d.round + 1, "training", d.train_loss);
    point(d.round + 1, "validation", d.valid_loss);
  }
  if (values.empty()) return;
  json y = {{"field", "loss"}, {"type", "quantitative"}, {"title", tree_loss_name(r.loss)}};
  if (positive) y["scale"] = {{"type", "log"}};
  json spec = spec_base("Loss after k rounds",
                        std::string(tree_loss_name(r.loss)) +
                            " of the model made of the first k rounds (k = 0: the base score)");
  json lines = {{"data", {{"values", values}}},
                {"mark", {{"type", "line"}, {"strokeWidth", 1.5}}},
                {"encoding",
                 {{"x", {{"field", "rounds"}, {"type", "quantitative"}}},
                  {"y", y},
                  {"color", {{"field", "set"}, {"type", "nominal"}}},
                  {"tooltip", json::array({{{"field", "set"}},
                                           {{"field", "rounds"}},
                                           {{"field", "loss"}, {"format", ".4g"}}})}}}};
  spec["layer"] = json::array({lines});
  if (r.best_valid_rounds >= 0)
    spec["layer"].push_back(round_rules(
        json::array(
            {{{"rounds", r.best_valid_rounds},
              {"label", fmt::format("lowest validation loss: {} rounds", r.best_valid_rounds)}}}),
        "rounds"));
  out.push_back({"tree-loss", "Loss after k rounds", text(spec)});
}

void concentration_chart(const TreeRunSummary& s, std::vector<Chart>& out) {
  const TreeDynamicsReport& r = s.report;
  json values = json::array();
  for (const WindowDynamics& w : r.windows) {
    const std::string top =
        w.top_feature < 0
            ? "-"
            : fmt::format("{} ({:.1f}%)", r.feature_name(w.top_feature), 100 * w.top_share);
    const std::string rounds = fmt::format("{}-{}", w.first_round, w.last_round);
    if (std::isfinite(w.hhi))
      values.push_back({{"round", w.first_round},
                        {"rounds", rounds},
                        {"measure", "HHI"},
                        {"value", w.hhi},
                        {"top", top}});
    if (std::isfinite(w.drift))
      values.push_back({{"round", w.first_round},
                        {"rounds", rounds},
                        {"measure", "drift"},
                        {"value", w.drift},
                        {"top", top}});
  }
  if (values.empty()) return;
  json spec =
      spec_base("Split concentration",
                std::string("per window: HHI of the features' ") + (r.has_gain ? "gain" : "split") +
                    " shares (1 = one feature) and drift from the window before (total variation)");
  spec["data"] = {{"values", values}};
  spec["mark"] = {{"type", "line"}, {"point", true}, {"strokeWidth", 1.5}};
  spec["encoding"] = {
      {"x", {{"field", "round"}, {"type", "quantitative"}, {"title", "first round of the window"}}},
      {"y",
       {{"field", "value"},
        {"type", "quantitative"},
        {"scale", {{"domain", {0, 1}}}},
        {"title", nullptr}}},
      {"color", {{"field", "measure"}, {"type", "nominal"}}},
      {"tooltip", json::array({{{"field", "rounds"}},
                               {{"field", "measure"}},
                               {{"field", "value"}, {"format", ".3f"}},
                               {{"field", "top"}, {"title", "top feature"}}})}};
  out.push_back({"tree-concentration", "Split concentration", text(spec)});
}

void features_chart(const TreeRunSummary& s, std::vector<Chart>& out) {
  const TreeDynamicsReport& r = s.report;
  json values = json::array();
  for (std::size_t i = 0; i < r.features.size() && i < 15; ++i)
    values.push_back({{"feature", r.feature_name(r.features[i].feature)},
                      {"share", r.features[i].share},
                      {"splits", r.features[i].splits}});
  if (values.empty()) return;
  json spec =
      spec_base("Features", std::string("share of the model's ") +
                                (r.has_gain ? "split gain" : "splits") + " (the 15 largest)");
  spec["data"] = {{"values", values}};
  spec["mark"] = {{"type", "bar"}, {"color", theme::kBar}};
  spec["encoding"] = {
      {"y", {{"field", "feature"}, {"type", "nominal"}, {"sort", "-x"}, {"title", nullptr}}},
      {"x", {{"field", "share"}, {"type", "quantitative"}, {"axis", {{"format", ".0%"}}}}},
      {"tooltip", json::array({{{"field", "feature"}},
                               {{"field", "share"}, {"format", ".1%"}},
                               {{"field", "splits"}}})}};
  out.push_back({"tree-features", "Features", text(spec)});
}

std::string chart_or_note(const std::vector<Chart>& charts, const std::string& name,
                          const char* missing) {
  for (const Chart& c : charts)
    if (c.name == name)
      return fmt::format("<div class=\"chart\" data-chart=\"{}\" aria-label=\"{}\"></div>\n",
                         esc(c.name), esc(c.title));
  return std::string("<p class=\"note\">") + missing + "</p>\n";
}

std::string cell(double v) { return esc(format_measure(v)); }

std::string windows_table(const TreeDynamicsReport& r) {
  std::string out =
      "<table class=\"stats\"><tr><th>rounds</th><th>mean |output|</th><th>velocity</th><th>mean "
      "|leaf|</th>"
      "<th>HHI</th><th>top feature</th><th>drift</th><th>training loss</th><th>validation "
      "loss</th></tr>\n";
  for (const WindowDynamics& w : r.windows)
    out += fmt::format(
        "<tr><td>{}-{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td "
        "class=\"mono\">{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        w.first_round, w.last_round, cell(w.contribution), cell(w.velocity), cell(w.leaf_mean_abs),
        cell(w.hhi),
        w.top_feature < 0
            ? "-"
            : esc(r.feature_name(w.top_feature)) + fmt::format(" ({:.1f}%)", 100 * w.top_share),
        cell(w.drift), cell(w.train_loss), cell(w.valid_loss));
  return out + "</table>\n";
}

std::string interactions_list(const TreeDynamicsReport& r) {
  const InteractionReport& in = r.interactions;
  if (in.kept.empty() && in.dropped.empty() && in.no_evidence.empty() && in.merged.empty())
    return "<p class=\"note\">No two features share a path.</p>\n";
  std::string out = fmt::format(
      "<p>Pairs split on one root-to-leaf path, ranked by the {} of the lower split; "
      "{}; {}.</p>\n<ul>\n",
      in.by_gain ? "gain" : "count",
      in.filtered ? fmt::format("pairs with VIF above {} dropped as collinear",
                                format_measure(r.thresholds.interaction_vif))
                  : "not VIF-filtered (no data)",
      in.tested ? fmt::format("each tested by {}-fold cross-validation on {} rows (held-out loss "
                              "reduction on top of the pairs above it, Bonferroni-corrected p)",
                              kInteractionFolds, in.test_rows)
                : "not tested (no labelled rows for the metric)");
  auto single = [](const InteractionPair& p) {
    return p.count == 1 ? std::string("; rests on a single split") : std::string();
  };
  for (const InteractionPair& p : in.kept)
    out += fmt::format(
        "<li><b class=\"mono\">{} &times; {}</b>: {}{:.1f}% of the pairs' {}, {} splits in {} "
        "trees, r {}, VIF {}{}</li>\n",
        esc(r.feature_name(p.a)), esc(r.feature_name(p.b)), esc(interaction_test_text(p)),
        100 * p.share, in.by_gain ? "gain" : "count", p.count, p.trees, cell(p.correlation),
        cell(p.vif), single(p));
  for (const InteractionPair& p : in.no_evidence)
    out += fmt::format(
        "<li class=\"note\">no evidence <span class=\"mono\">{} &times; {}</span>: {}not "
        "suggested{}</li>\n",
        esc(r.feature_name(p.a)), esc(r.feature_name(p.b)), esc(interaction_test_text(p)),
        single(p));
  for (const InteractionPair& p : in.dropped)
    out += fmt::format(
        "<li class=\"note\">dropped <span class=\"mono\">{} &times; {}</span>: collinear (r {}, "
        "VIF {})</li>\n",
        esc(r.feature_name(p.a)), esc(r.feature_name(p.b)), cell(p.correlation), cell(p.vif));
  for (const InteractionPair& p : in.merged)
    out += fmt::format(
        "<li class=\"note\">merged <span class=\"mono\">{}</span> into <span class=\"mono\">{}</span> "
        "before pairing: near-duplicates (r {}, VIF {})</li>\n",
        esc(r.feature_name(p.a)), esc(r.feature_name(p.b)), cell(p.correlation), cell(p.vif));
  return out + "</ul>\n";
}

}  // namespace

std::vector<Chart> tree_charts(const TreeRunSummary& s) {
  std::vector<Chart> out;
  contribution_chart(s, out);
  loss_chart(s, out);
  concentration_chart(s, out);
  features_chart(s, out);
  return out;
}

std::string tree_section(const TreeRunSummary& s, const std::vector<Chart>& charts) {
  const TreeDynamicsReport& r = s.report;
  std::string out = "<section id=\"trees\"><h2>Boosting rounds</h2>\n<table class=\"stats\"><tr>";
  const std::pair<const char*, std::string> cells[] = {
      {"model", s.model},
      {"library", r.dialect + " " + r.booster},
      {"objective", r.objective},
      {"rounds", fmt::format("{} x {} trees", r.rounds, r.trees_per_round)},
      {"features", std::to_string(r.num_features)},
      {"data", s.data.empty() ? std::string("none")
                              : fmt::format("{} ({} rows)", s.data, r.reference_rows)},
      {"validation", s.validation.empty()
                         ? std::string("none")
                         : fmt::format("{} ({} rows)", s.validation, r.validation_rows)},
      {"metric",
       r.loss == TreeLoss::kNone ? std::string("none") : std::string(tree_loss_name(r.loss))}};
  for (const auto& [k, v] : cells) out += "<th>" + std::string(k) + "</th>";
  out += "</tr><tr>";
  for (const auto& [k, v] : cells) out += "<td class=\"mono\">" + esc(v) + "</td>";
  out += "</tr></table>\n";
  out += chart_or_note(charts, "tree-contribution",
                       "No round contributions: the run has no reference rows.");
  out += chart_or_note(charts, "tree-loss",
                       "No loss curve: the run has no labelled rows or no metric.");
  out += chart_or_note(charts, "tree-concentration", "No splits to measure concentration on.");
  out += chart_or_note(charts, "tree-features", "No splits.");
  out += fmt::format("<h3>Windows of {} rounds</h3>\n", r.window) + windows_table(r);
  if (!r.not_judged.empty()) {
    out += "<h3>Not judged</h3><ul>\n";
    for (const std::string& n : r.not_judged) out += "<li>" + esc(n) + "</li>\n";
    out += "</ul>\n";
  }
  out += "<h3>Interaction suggestions</h3>\n" + interactions_list(r);
  return out + "</section>\n";
}

}  // namespace gradscope::internal
