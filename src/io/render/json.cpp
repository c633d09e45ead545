#include "gradscope/io/render/json.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/store/run_metadata.h"

namespace gradscope {
namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

// Every threshold the rules judged with, as the run's metadata keeps them (one table).
nlohmann::json thresholds_json(const Thresholds& t) { return nlohmann::json::parse(thresholds_to_json(t)); }

}  // namespace

std::string render_json(const Report& report, int indent) {
  nlohmann::json nodes = nlohmann::json::array();
  for (const NodeReport& n : report.nodes) {
    nlohmann::json flags = nlohmann::json::array();
    for (Flag f : n.flags.list()) flags.push_back(flag_name(f));
    nlohmann::json evidence = nlohmann::json::array();
    for (const Evidence& e : n.evidence) {
      evidence.push_back({{"flag", flag_name(e.flag)},
                          {"site", site_name(e.site)},
                          {"first_step", e.first_step >= 0 ? nlohmann::json(e.first_step) : nlohmann::json()},
                          {"value", number(e.value)},
                          {"threshold", number(e.threshold)},
                          {"measure", e.measure},
                          {"detail", e.detail}});
    }
    nodes.push_back({{"node", n.node},
                     {"steps", n.steps},
                     {"first_step", n.first_step},
                     {"last_step", n.last_step},
                     {"act_mean_abs", number(n.act_mean_abs)},
                     {"act_std", number(n.act_std)},
                     {"out_grad_l2", number(n.out_grad_l2)},
                     {"param_grad_l2", number(n.param_grad_l2)},
                     {"param_l2", number(n.param_l2)},
                     {"grad_param_ratio", number(n.grad_param_ratio)},
                     {"update_ratio", number(n.update_ratio)},
                     {"grad_snr", number(n.grad_snr)},
                     {"effective_rank", number(n.effective_rank)},
                     {"channels", n.channels},
                     {"dead_channels", n.dead_channels},
                     {"ignored_channels", n.ignored_channels},
                     {"nan", n.nan},
                     {"inf", n.inf},
                     {"nonfinite_steps", n.nonfinite_steps},
                     {"flags", flags},
                     {"evidence", evidence}});
  }
  nlohmann::json worst = nlohmann::json::array();
  for (const NodeReport* n : report.flagged_worst_first()) worst.push_back(n->node);
  const NonFiniteOrigin& o = report.nonfinite_origin;
  nlohmann::json origin =
      o.found() ? nlohmann::json{{"step", o.step}, {"node", o.node}, {"phase", o.phase},
                                 {"site", site_name(o.site)}}
                : nlohmann::json();
  if (o.found() && o.rank >= 0) origin["rank"] = o.rank;  // merged across ranks only
  const LossScaleReport& ls = report.loss_scale;
  nlohmann::json loss_scale;  // null: no loss scale was set
  if (ls.steps > 0) {
    loss_scale = {{"verdict", loss_scale_verdict_name(ls.verdict)},
                  {"steps", ls.steps},
                  {"skipped", ls.skipped},
                  {"first_skipped", ls.first_skipped >= 0 ? nlohmann::json(ls.first_skipped) : nlohmann::json()},
                  {"last_skipped", ls.last_skipped >= 0 ? nlohmann::json(ls.last_skipped) : nlohmann::json()},
                  {"first_fit", ls.first_fit >= 0 ? nlohmann::json(ls.first_fit) : nlohmann::json()},
                  {"skipped_after_fit", ls.skipped_after_fit},
                  {"steps_after_fit", ls.steps_after_fit},
                  {"trailing_skipped", ls.trailing_skipped},
                  {"first_scale", number(ls.first_scale)},
                  {"last_scale", number(ls.last_scale)},
                  {"min_scale", number(ls.min_scale)},
                  {"skipped_steps", ls.skipped_steps},
                  {"scale_changes", nlohmann::json::array()}};
    for (const auto& [step, scale] : ls.scale_changes)
      loss_scale["scale_changes"].push_back({{"step", step}, {"scale", number(scale)}});
  }
  const SeriesReport& sr = report.series;
  nlohmann::json series;  // null: no loss and no global gradient norm was recorded
  if (sr.loss_steps > 0 || sr.grad_norm_steps > 0) {
    const auto step_or_null = [](int64_t s) { return s >= 0 ? nlohmann::json(s) : nlohmann::json(); };
    nlohmann::json spikes = nlohmann::json::array();
    for (const SeriesSpike& p : sr.spikes)
      spikes.push_back({{"step", p.step}, {"loss", number(p.value)}, {"band_mean", number(p.band_mean)},
                        {"band_sd", number(p.band_sd)}, {"z", number(p.z)}, {"early_rule", p.early_rule}});
    nlohmann::json leads = nlohmann::json::array();
    for (const SpikeLead& l : sr.leads)
      leads.push_back({{"node", l.node}, {"step", l.step}, {"lead", l.lead}, {"z", number(l.z)}, {"ratio", number(l.ratio)}});
    series = {{"loss_steps", sr.loss_steps},
              {"first_loss", number(sr.first_loss)},
              {"last_loss", number(sr.last_loss)},
              {"min_loss", number(sr.min_loss)},
              {"min_loss_step", step_or_null(sr.min_loss_step)},
              {"spike_count", sr.spike_count},
              {"spikes", spikes},
              {"divergence_step", step_or_null(sr.divergence_step)},
              {"divergence_nonfinite", sr.divergence_nonfinite},
              {"divergence_loss", number(sr.divergence_value)},
              {"divergence_level", number(sr.divergence_level)},
              {"out_of_range_losses", sr.out_of_range_losses},
              {"first_out_of_range_step", step_or_null(sr.first_out_of_range_step)},
              {"first_out_of_range_loss", number(sr.first_out_of_range_loss)},
              {"grad_norm_steps", sr.grad_norm_steps},
              {"grad_norm_median", number(sr.grad_norm_median)},
              {"grad_norm_p99", number(sr.grad_norm_p99)},
              {"grad_norm_max", number(sr.grad_norm_max)},
              {"grad_norm_max_step", step_or_null(sr.grad_norm_max_step)},
              {"grad_norm_steps_before", sr.grad_norm_steps_before},
              {"grad_norm_median_before", number(sr.grad_norm_median_before)},
              {"grad_norm_max_before", number(sr.grad_norm_max_before)},
              {"clipped_steps", sr.clipped_steps},
              {"clip_known_steps", sr.clip_known_steps},
              {"leads", leads}};
  }
  nlohmann::json doc = {{"gradscope_report",
                         {{"healthy", report.healthy()},
                          {"nonfinite_origin", origin},
                          {"loss_scale", loss_scale},
                          {"series", series},
                          {"steps", report.steps},
                          {"flagged_worst_first", worst},
                          {"thresholds", thresholds_json(report.thresholds)},
                          {"nodes", nodes}}}};
  // Replace rather than throw on invalid UTF-8 in node names.
  return json_text(doc.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace)) + "\n";
}

}  // namespace gradscope
