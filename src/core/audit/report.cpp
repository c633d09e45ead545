#include "gradscope/core/audit/report.h"

#include <algorithm>
#include <unordered_set>
#include <utility>

#include "gradscope/core/error.h"

namespace gradscope {

bool NodeReport::raise(Evidence e) {
  if (flags.contains_any(flag_info(e.flag).yields_to)) return false;
  // A flag raised earlier that yields to this one goes, with its evidence: the order the rules
  // run in does not decide what the node shows.
  const uint32_t bit = flag_bits({e.flag});
  for (Flag f : flags.list())
    if (flag_info(f).yields_to & bit) {
      flags.erase(f);
      evidence.erase(std::remove_if(evidence.begin(), evidence.end(), [f](const Evidence& x) { return x.flag == f; }),
                     evidence.end());
    }
  flags.erase(Flag::kHealthy);
  flags.insert(e.flag);
  evidence.push_back(std::move(e));
  return true;
}

int NodeReport::severity() const {
  int worst = 0;
  for (Flag f : flags.list()) worst = std::max(worst, flag_severity(f));
  return worst;
}

std::string NodeReport::flags_label(const char* sep) const {
  std::string out;
  for (Flag f : flags.list()) {
    if (!out.empty()) out += sep;
    out += flag_name(f);
    if (f == Flag::kDeadChannels) out += "(" + std::to_string(dead_channels) + ")";
    if (f == Flag::kIgnoredChannels) out += "(" + std::to_string(ignored_channels) + ")";
  }
  return out;
}

bool Report::healthy() const {
  if (loss_scale.verdict == LossScaleReport::Verdict::kWarning) return false;
  if (series.diverged() || series.spike_count > 0 || series.out_of_range_losses > 0) return false;
  return std::all_of(nodes.begin(), nodes.end(),
                     [](const NodeReport& n) { return n.flags.contains(Flag::kHealthy); });
}

std::vector<const NodeReport*> Report::flagged_worst_first() const {
  std::vector<const NodeReport*> out;
  for (const NodeReport& n : nodes)
    if (!n.flags.contains(Flag::kHealthy)) out.push_back(&n);
  auto first_seen = [](const NodeReport* n) {
    int64_t first = -1;
    for (const Evidence& e : n->evidence)
      if (flag_severity(e.flag) == n->severity()) first = e.first_step;
    return first < 0 ? INT64_MAX : first;
  };
  // Among equals, the node where NaN/Inf started comes first: it is where to look.
  auto is_origin = [&](const NodeReport* n) { return nonfinite_origin.found() && n->node == nonfinite_origin.node; };
  std::stable_sort(out.begin(), out.end(), [&](const NodeReport* a, const NodeReport* b) {
    if (a->severity() != b->severity()) return a->severity() > b->severity();
    if (first_seen(a) != first_seen(b)) return first_seen(a) < first_seen(b);
    return is_origin(a) && !is_origin(b);
  });
  return out;
}

std::vector<const NodeReport*> Report::verdict_nodes() const {
  std::unordered_set<std::string> ids;
  for (const NodeReport& n : nodes) ids.insert(n.node);
  std::vector<const NodeReport*> out;
  for (const NodeReport& n : nodes) {
    // A submodule's id is its node's, a '/', then its path: some part before a '/' names
    // another node in the report.
    bool submodule = false;
    for (std::size_t slash = n.node.find('/'); slash != std::string::npos && !submodule;
         slash = n.node.find('/', slash + 1))
      submodule = ids.count(n.node.substr(0, slash)) > 0;
    if (!submodule) out.push_back(&n);
  }
  return out;
}

void assert_healthy(const Report& report) {
  const auto flagged = report.flagged_worst_first();
  const LossScaleReport& ls = report.loss_scale;
  const bool scale_warning = ls.verdict == LossScaleReport::Verdict::kWarning;
  if (flagged.empty() && !scale_warning) return;
  std::string msg;
  if (!flagged.empty()) {
    msg = std::to_string(flagged.size()) + " unhealthy node" + (flagged.size() == 1 ? "" : "s") + ":";
    for (const NodeReport* n : flagged) msg += " " + n->node + " [" + n->flags.join() + "]";
  }
  if (scale_warning)
    msg += std::string(msg.empty() ? "" : "; ") + "LOSS_SCALE_OVERFLOW: " + std::to_string(ls.skipped) + " of " +
           std::to_string(ls.steps) + " steps skipped on overflow";
  throw HealthError(msg);
}

}  // namespace gradscope
