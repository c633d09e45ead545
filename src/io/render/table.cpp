#include "gradscope/io/render/table.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "gradscope/core/findings/findings.h"
#include "gradscope/io/render/safe_text.h"

namespace gradscope {
namespace {

// The registry's comparison (core/vocabulary/flag_info.h), not a list of flags kept here.
const char* comparison(Flag f) { return flag_comparison(flag_info(f).margin); }

}  // namespace

std::string format_measure(double value) {
  if (std::isnan(value)) return "-";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == 0) return "0";
  const double a = std::fabs(value);
  if (a >= 1e-3 && a < 1e4) return fmt::format("{:.3g}", value);
  return fmt::format("{:.2e}", value);
}

std::string describe_evidence(const Evidence& e) {
  std::string out = flag_name(e.flag);
  if (e.first_step >= 0) out += fmt::format(" since step {}", e.first_step);
  if (e.flag == Flag::kNaN || e.flag == Flag::kInf) {
    out += fmt::format(": {} {} (first in {})", e.value, e.measure, site_name(e.site));
  } else if (e.flag == Flag::kNoData) {
    out += ": no activation or gradient recorded";
  } else if (e.flag == Flag::kDeadChannels || e.flag == Flag::kIgnoredChannels) {
    out += fmt::format(": {} {} {}", e.value, e.measure, format_measure(e.threshold));
  } else if (e.flag == Flag::kFrozen || e.measure == "submodules flagged") {
    // No comparison: the detail says what was seen and where.
  } else {
    out += fmt::format(": {} = {} {} {}", e.measure, format_measure(e.value),
                       comparison(e.flag), format_measure(e.threshold));
  }
  if (e.measure == "submodules flagged") out += fmt::format(" {}", terminal_text(e.detail));
  else if (!e.detail.empty()) out += fmt::format(" ({})", terminal_text(e.detail));
  return out;
}

std::string render_table(const Report& report, bool with_verdict) {
  constexpr std::size_t kColumns = 10;
  const std::array<const char*, kColumns> header = {
      "node",         "steps",   "act|mean|",  "act std", "|out grad|",
      "|param grad|", "|param|", "grad/param", "update",  "flags"};
  std::vector<std::array<std::string, kColumns>> rows;
  for (const NodeReport& n : report.nodes) {
    rows.push_back({terminal_text(n.node), std::to_string(n.steps), format_measure(n.act_mean_abs),
                    format_measure(n.act_std), format_measure(n.out_grad_l2),
                    format_measure(n.param_grad_l2), format_measure(n.param_l2),
                    format_measure(n.grad_param_ratio), format_measure(n.update_ratio),
                    n.flags_label()});
  }
  std::array<std::size_t, kColumns> width{};
  for (std::size_t c = 0; c < header.size(); ++c) {
    width[c] = std::string(header[c]).size();
    for (const auto& r : rows) width[c] = std::max(width[c], r[c].size());
  }
  std::string out;
  auto emit = [&](auto cell) {
    std::string line;
    for (std::size_t c = 0; c < header.size(); ++c) {
      // Node names and flags align left, numbers right; the last column has no padding.
      if (c == 0) line += fmt::format("{:<{}}", cell(c), width[c]);
      else if (c + 1 == header.size()) line += "  " + std::string(cell(c));
      else line += fmt::format("  {:>{}}", cell(c), width[c]);
    }
    out += line + "\n";
  };
  emit([&](std::size_t c) { return std::string(header[c]); });
  for (const auto& r : rows) emit([&](std::size_t c) { return r[c]; });

  bool any = false;
  for (const NodeReport& n : report.nodes) {
    for (const Evidence& e : n.evidence) {
      if (!any) out += "\nevidence:\n";
      any = true;
      // After a blow-up, what began later (stagnation, saturation, NaN) is its effect.
      const bool after = report.series.follows_divergence(e.first_step);
      out += "  " + terminal_text(n.node) + " " + describe_evidence(e) +
             (after ? fmt::format(" (after the divergence at step {}: its effect)", report.series.divergence_step) : "") +
             "\n";
    }
  }
  const NonFiniteOrigin& o = report.nonfinite_origin;
  if (o.found())
    out += fmt::format("\nnon-finite values first appeared at step {} in {} ({}, {}{})\n", o.step,
                       terminal_text(o.node), o.phase, site_name(o.site),
                       o.rank >= 0 ? fmt::format(", rank {}", o.rank) : std::string());
  if (const auto scale = loss_scale_finding(report.loss_scale))
    out += "\nLOSS_SCALE_OVERFLOW " + scale->premise + "\n";
  for (const Finding& f : series_findings(report.series, report.thresholds))
    out += "\n" + f.type + " " + terminal_text(f.premise) + "\n  action: " + terminal_text(f.action) + "\n";
  if (with_verdict) out += "\n" + render_verdict(report) + "\n";
  return out;
}

std::string render_verdict(const Report& report) {
  // The nodes a verdict counts: a submodule's flags are its node's already (roll-up).
  const std::vector<const NodeReport*> counted = report.verdict_nodes();
  std::vector<const NodeReport*> flagged;
  for (const NodeReport* n : report.flagged_worst_first())
    if (std::find(counted.begin(), counted.end(), n) != counted.end()) flagged.push_back(n);
  const auto plural = [](std::size_t n, const char* word) {
    return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
  };
  const LossScaleReport& ls = report.loss_scale;
  const std::string skips = ls.found() ? fmt::format("; {} skipped on loss-scale overflow",
                                                     plural(static_cast<std::size_t>(ls.skipped), "step"))
                                       : std::string();
  // The loss's verdict heads the line: a divergence is the cause, node flags after it effects.
  const std::string loss = series_headline(report.series);
  if (!loss.empty()) {
    std::string line = "verdict: unhealthy: " + terminal_text(loss);
    if (!flagged.empty())
      line += fmt::format("; {} of {} flagged, worst {} [{}]", flagged.size(), plural(counted.size(), "node"),
                          terminal_text(flagged.front()->node), flagged.front()->flags_label());
    return line + skips;
  }
  if (flagged.empty() && report.healthy())
    return fmt::format("verdict: healthy ({}, {}{})", plural(counted.size(), "node"),
                       plural(static_cast<std::size_t>(report.steps), "step"), skips);
  if (flagged.empty())  // every node healthy, but the loss scaler keeps skipping steps
    return fmt::format("verdict: unhealthy: LOSS_SCALE_OVERFLOW: {} of {} skipped on overflow, loss scale {}",
                       plural(static_cast<std::size_t>(ls.skipped), "step"), ls.steps, ls.last_scale);
  const NodeReport& worst = *flagged.front();
  std::string line = fmt::format("verdict: unhealthy: {} of {} flagged over {}; worst {} [{}]",
                                 flagged.size(), plural(counted.size(), "node"),
                                 plural(static_cast<std::size_t>(report.steps), "step"),
                                 terminal_text(worst.node), worst.flags_label());
  for (const Evidence& e : worst.evidence) {
    if (flag_severity(e.flag) == worst.severity() && e.first_step >= 0)
      line += fmt::format(" since step {}", e.first_step);
  }
  return line + skips;
}

}  // namespace gradscope
