#include "gradscope/io/trees/text.h"

#include <fmt/format.h>

#include <cmath>

#include "gradscope/core/vocabulary/numbers.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/render/table.h"
#include "trees/internal/codec.h"

namespace gradscope {
namespace {

std::string pct(double v) { return std::isfinite(v) ? fmt::format("{:.1f}%", 100 * v) : "-"; }

std::string feature(const TreeDynamicsReport& r, int32_t f) {
  return terminal_text(r.feature_name(f));
}

std::string rows_text(int64_t rows) { return fmt::format("{} row{}", rows, rows == 1 ? "" : "s"); }

}  // namespace

std::string interaction_test_text(const InteractionPair& p) {
  if (!std::isfinite(p.cv_gain)) return "";
  return fmt::format("held-out gain {} (p {}), ", shown_number(p.cv_gain), shown_number(p.p_value));
}

std::string tree_finding_label(const TreeDynamicsReport& r, const TreeFinding& f) {
  if (tree_flag_info(f.flag).names_feature)
    return fmt::format("{} on '{}'", tree_flag_name(f.flag), feature(r, f.feature));
  return fmt::format("{} from round {}", tree_flag_name(f.flag), f.first_round);
}

std::string render_tree_timeline(const TreeRunSummary& s) {
  const TreeDynamicsReport& r = s.report;
  std::string out = fmt::format(
      "model: {} ({} {}, objective {}), {} round{} x {} tree{}, {} output{}, {} features\n",
      terminal_text(s.model), terminal_text(r.dialect), terminal_text(r.booster),
      terminal_text(r.objective), r.rounds, r.rounds == 1 ? "" : "s", r.trees_per_round,
      r.trees_per_round == 1 ? "" : "s", r.outputs, r.outputs == 1 ? "" : "s", r.num_features);
  if (s.data.empty()) {
    out += "data: none (the rules that need rows say so below)\n";
  } else {
    out += fmt::format("data: {}, {}", terminal_text(s.data), rows_text(r.reference_rows));
    if (!s.label.empty()) out += fmt::format(", label '{}'", terminal_text(s.label));
    if (!s.validation.empty())
      out += fmt::format("; validation: {}, {}", terminal_text(s.validation),
                         rows_text(r.validation_rows));
    out += r.loss == TreeLoss::kNone ? "; no metric for this objective\n"
                                     : fmt::format("; metric {}\n", tree_loss_name(r.loss));
  }
  if (std::isfinite(r.base_train_loss) || std::isfinite(r.base_valid_loss))
    out += fmt::format("base score alone: training {} {}, validation {}\n", tree_loss_name(r.loss),
                       format_measure(r.base_train_loss), format_measure(r.base_valid_loss));
  out += fmt::format(
      "\nrounds in windows of {} (contribution: mean |round output| over the rows; "
      "velocity: W1 between consecutive rounds' outputs)\n",
      r.window);
  out += fmt::format("{:<11} {:>10} {:>10} {:>10} {:>10} {:>6} {:<22} {:>6} {:>10} {:>10}\n",
                     "rounds", "contrib", "max", "velocity", "|leaf|", "HHI", "top feature",
                     "drift", "train", "valid");
  for (const WindowDynamics& w : r.windows) {
    const std::string top =
        w.top_feature < 0 ? "-" : fmt::format("{} {}", feature(r, w.top_feature), pct(w.top_share));
    double max = NAN;
    for (int32_t k = w.first_round; k <= w.last_round; ++k)
      if (!(r.per_round[static_cast<std::size_t>(k)].contribution_max <= max))
        max = r.per_round[static_cast<std::size_t>(k)].contribution_max;
    out += fmt::format("{:<11} {:>10} {:>10} {:>10} {:>10} {:>6} {:<22} {:>6} {:>10} {:>10}\n",
                       fmt::format("{}-{}", w.first_round, w.last_round),
                       format_measure(w.contribution), format_measure(max),
                       format_measure(w.velocity), format_measure(w.leaf_mean_abs),
                       std::isfinite(w.hhi) ? fmt::format("{:.3f}", w.hhi) : "-", top,
                       std::isfinite(w.drift) ? fmt::format("{:.2f}", w.drift) : "-",
                       format_measure(w.train_loss), format_measure(w.valid_loss));
  }
  if (r.best_valid_rounds >= 0)
    out += fmt::format("validation {} lowest after {} round{}\n", tree_loss_name(r.loss),
                       r.best_valid_rounds, r.best_valid_rounds == 1 ? "" : "s");
  return out;
}

std::string render_tree_findings(const TreeRunSummary& s) {
  const TreeDynamicsReport& r = s.report;
  std::size_t tentative = 0;
  for (const TreeFinding& f : r.findings) tentative += f.tentative();
  std::string out = fmt::format("\nfindings: {}{}\n", r.findings.size(),
                                tentative ? fmt::format(" ({} tentative: not counted against the "
                                                        "run)",
                                                        tentative)
                                          : "");
  for (const TreeFinding& f : r.findings) {
    // The rule's computed confidence, where it has one; tentative below kTreeConfident.
    const std::string sure =
        std::isfinite(f.confidence)
            ? fmt::format(" (confidence {}{})", shown_number(f.confidence),
                          f.tentative() ? ", tentative" : "")
            : "";
    out += fmt::format("  {}{}: {}\n", tree_finding_label(r, f), sure, terminal_text(f.advice));
    out +=
        fmt::format("    evidence: {} = {} (threshold {}); {}\n", terminal_text(f.measure),
                    format_measure(f.value), format_measure(f.threshold), terminal_text(f.detail));
  }
  if (!r.not_judged.empty()) {
    out += "not judged:\n";
    for (const std::string& n : r.not_judged) out += "  - " + terminal_text(n) + "\n";
  }
  if (!r.features.empty()) {
    out += fmt::format("features by {} share:", r.has_gain ? "gain" : "split");
    for (std::size_t i = 0; i < r.features.size() && i < 5; ++i)
      out += fmt::format("{} {} {}", i ? "," : "", feature(r, r.features[i].feature),
                         pct(r.features[i].share));
    out += "\n";
  }
  const InteractionReport& in = r.interactions;
  if (!in.kept.empty() || !in.no_evidence.empty()) {
    out += fmt::format("interaction suggestions (pairs on one path, by {}{}{}):\n",
                       in.by_gain ? "gain" : "count",
                       in.filtered ? fmt::format(", collinear pairs with VIF > {} dropped",
                                                 format_measure(r.thresholds.interaction_vif))
                                   : ", not VIF-filtered: no data",
                       in.tested ? fmt::format(", each tested by {}-fold cross-validation on {} "
                                               "rows",
                                               kInteractionFolds, in.test_rows)
                                 : ", not tested: no labelled rows for the metric");
    for (const InteractionPair& p : in.kept)
      out += fmt::format("  {} x {}: {}{} of the pairs' {}, {} split{} in {} tree{}, r {}, VIF {}{}\n",
                         feature(r, p.a), feature(r, p.b), interaction_test_text(p), pct(p.share),
                         in.by_gain ? "gain" : "count", p.count, p.count == 1 ? "" : "s", p.trees,
                         p.trees == 1 ? "" : "s", format_measure(p.correlation),
                         format_measure(p.vif), p.count == 1 ? "; rests on a single split" : "");
    for (const InteractionPair& p : in.no_evidence)
      out += fmt::format("  no evidence {} x {}: {}not suggested{}\n", feature(r, p.a),
                         feature(r, p.b), interaction_test_text(p),
                         p.count == 1 ? "; rests on a single split" : "");
    for (const InteractionPair& p : in.dropped)
      out += fmt::format("  dropped {} x {}: collinear (r {}, VIF {})\n", feature(r, p.a),
                         feature(r, p.b), format_measure(p.correlation), format_measure(p.vif));
  }
  for (const InteractionPair& p : in.merged)
    out += fmt::format("  merged {} into {} before pairing: near-duplicates (r {}, VIF {})\n",
                       feature(r, p.a), feature(r, p.b), format_measure(p.correlation),
                       format_measure(p.vif));
  return out;
}

std::string tree_verdict(const TreeRunSummary* s) {
  if (!s || s->report.healthy()) return "";
  // Tentative findings are listed with the findings, not counted in the verdict.
  std::string out = "; trees: ";
  bool first = true;
  for (const TreeFinding& f : s->report.findings) {
    if (f.tentative()) continue;
    out += (first ? "" : ", ") + tree_finding_label(s->report, f);
    first = false;
  }
  return out;
}

namespace {
std::size_t tentative_findings(const TreeRunSummary& s) {
  std::size_t n = 0;
  for (const TreeFinding& f : s.report.findings) n += f.tentative() ? 1 : 0;
  return n;
}
}  // namespace

std::string tree_quiet_verdict(const TreeRunSummary& s) {
  const std::size_t n = tentative_findings(s);
  return n == 0 ? "no findings" : fmt::format("{} tentative finding{}, not counted", n, n == 1 ? "" : "s");
}

std::string tree_run_verdict(const TreeRunSummary& s) {
  if (!s.report.healthy()) return "verdict: unhealthy: " + tree_verdict(&s).substr(2);
  // Tentative findings are listed above the verdict: it says so rather than "no tree finding".
  const std::size_t n = tentative_findings(s);
  return n == 0 ? "verdict: healthy: no tree finding"
                : fmt::format("verdict: healthy: {} tentative tree finding{}, not counted against the run", n,
                              n == 1 ? "" : "s");
}

std::string render_tree_json(const TreeRunSummary& s, int indent) {
  return json_text(internal::tree_summary_to_json(s).dump(
             indent, ' ', false, nlohmann::ordered_json::error_handler_t::replace)) +
         "\n";
}

}  // namespace gradscope
