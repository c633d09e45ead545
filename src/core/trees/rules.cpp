// The four tree rules over measured rounds (docs/trees.md, "Rules"). Each finding carries the
// round it begins at, the value compared, the threshold and the numbers behind it; a rule that
// lacks the data it needs says so in not_judged instead of guessing.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <string>
#include <utility>

#include "gradscope/core/vocabulary/numbers.h"
#include "trees/internal/parts.h"

namespace gradscope::tree_internal {
namespace {

// Four significant digits, whole numbers (counts) in full (findings/numbers.h).
std::string num(double v) { return shown_number(v); }

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100 * v);
  return buf;
}

std::string rounds_text(int64_t n) { return std::to_string(n) + (n == 1 ? " round" : " rounds"); }

// Training (or validation) loss after `k` rounds; k = 0 is the base score alone.
double loss_after(const TreeDynamicsReport& r, int32_t k, bool valid) {
  if (k == 0) return valid ? r.base_valid_loss : r.base_train_loss;
  const RoundDynamics& d = r.per_round[static_cast<std::size_t>(k - 1)];
  return valid ? d.valid_loss : d.train_loss;
}

bool have_train_loss(const TreeDynamicsReport& r) { return std::isfinite(r.base_train_loss); }
bool have_valid_loss(const TreeDynamicsReport& r) { return std::isfinite(r.base_valid_loss); }
bool have_contributions(const TreeDynamicsReport& r) {
  return !r.per_round.empty() && std::isfinite(r.per_round[0].contribution);
}

// Why a loss rule cannot run: no metric for the objective, or no labelled rows.
std::string loss_missing(const TreeDynamicsReport& r, const char* rows) {
  if (r.loss == TreeLoss::kNone)
    return "the objective '" + r.objective + "' has no metric gradscope computes";
  return std::string("needs ") + rows;
}

// Stalled from the start: every round together removed almost none of the base score's loss.
bool stalled(TreeDynamicsReport& r) {
  const TreeThresholds& t = r.thresholds;
  const double base = r.base_train_loss, last = loss_after(r, r.rounds, false);
  if (!(base > 0) || !std::isfinite(last)) return false;
  const double drop = (base - last) / base;
  // A loss that rose a lot is a diverging model (EXPLODING), not a flat one.
  if (!(std::fabs(drop) < t.stall_loss_drop)) return false;
  const std::string loss = tree_loss_name(r.loss);
  r.findings.push_back(
      {TreeFlag::kStagnant, 0, drop, t.stall_loss_drop,
       "share of the base score's training " + loss + " removed by all " + rounds_text(r.rounds),
       "training " + loss + " " + num(base) + " at the base score, " + num(last) + " after " +
           rounds_text(r.rounds),
       "the model barely learned: its " + rounds_text(r.rounds) + " removed " + pct(drop) +
           " of the starting training loss; raise the learning rate (eta), or check that the label "
           "varies "
           "and the features carry it",
       -1});
  return true;
}

// A tail of rounds that each add almost nothing: stop where it starts.
void stagnant_tail(TreeDynamicsReport& r, const std::vector<WindowDynamics>& windows) {
  const TreeThresholds& t = r.thresholds;
  double peak = 0;
  std::size_t peak_window = 0;
  for (std::size_t w = 0; w < windows.size(); ++w)
    if (windows[w].contribution > peak) {
      peak = windows[w].contribution;
      peak_window = w;
    }
  if (!(peak > 0)) return;
  const double limit = t.stagnant_fraction * peak;
  int32_t start = r.rounds;
  double largest = 0;
  while (start > 0 && r.per_round[static_cast<std::size_t>(start - 1)].contribution < limit) {
    --start;
    largest = std::max(largest, r.per_round[static_cast<std::size_t>(start)].contribution);
  }
  const int32_t tail = r.rounds - start;
  if (tail < t.stagnant_rounds) return;
  const WindowDynamics& busiest = windows[peak_window];
  r.findings.push_back({TreeFlag::kStagnant, start, largest / peak, t.stagnant_fraction,
                        "largest mean |round output| from round " + std::to_string(start) +
                            " on, as a fraction of the busiest window's mean",
                        "rounds " + std::to_string(start) + "-" + std::to_string(r.rounds - 1) +
                            " move predictions by at most " + num(largest) +
                            " (mean |round output|); rounds " +
                            std::to_string(busiest.first_round) + "-" +
                            std::to_string(busiest.last_round) + " by " + num(peak) + " on average",
                        "the last " + rounds_text(tail) + " add almost nothing: keep the first " +
                            rounds_text(start) + " (num_boost_round=" + std::to_string(start) +
                            ") or use early stopping",
                        -1});
}

// What the misclassifications say beside the loss: a logloss can rise through fewer, more
// confident wrong predictions with the same errors, which early stopping on the error would
// not see; or through more errors.
std::string errors_text(const TreeDynamicsReport& r) {
  const int64_t a = r.valid_errors_best, b = r.valid_errors_last;
  if (a < 0 || b < 0) return "";
  const std::string counts = "misclassified validation rows " + std::to_string(a) + " -> " +
                             std::to_string(b) + " of " + std::to_string(r.validation_rows);
  if (b > a) return "; " + counts + ": more errors";
  return "; " + counts + ": the loss and the errors disagree: the rise is wrong predictions made " +
         "more confident, not more errors";
}

void overfitting(TreeDynamicsReport& r) {
  const TreeThresholds& t = r.thresholds;
  const int32_t best = r.best_valid_rounds;
  const double v_best = loss_after(r, best, true), v_last = loss_after(r, r.rounds, true);
  const double t_best = loss_after(r, best, false), t_last = loss_after(r, r.rounds, false);
  if (!(v_best > 0)) return;
  const double rise = (v_last - v_best) / v_best;
  if (r.rounds - best < t.overfit_rounds || !(rise > t.overfit_rise) || !(t_last < t_best)) return;
  // Below the strict z a large rise is still reported, with the confidence the rows support:
  // a small validation set cannot reach overfit_z even when the rise is real.
  const bool strict = r.valid_rise_z > t.overfit_z;
  if (!strict && !(rise > t.overfit_large_rise && r.valid_rise_z > 0)) return;
  const std::string loss = tree_loss_name(r.loss);
  std::string detail =
      "validation " + loss + " lowest after " + rounds_text(best) + " (" + num(v_best) + "), " +
      num(v_last) + " after " + rounds_text(r.rounds) + "; training " + loss + " fell from " +
      num(t_best) + " to " + num(t_last) + " over the same rounds; the per-row rise is " +
      num(r.valid_rise_z) + " standard errors (paired over " + std::to_string(r.validation_rows) +
      " rows" + (strict ? ")" : ", below overfit_z " + num(t.overfit_z) + ")");
  if (r.valid_rise_rows > 0)
    detail += "; " + std::to_string(r.valid_rise_rows) + " of " +
              std::to_string(r.validation_rows) + " rows carry half of the rise";
  detail += errors_text(r);
  if (std::isfinite(r.valid_rise_confidence))
    detail += "; confidence " + num(r.valid_rise_confidence) +
              " (permutation test against every earlier prefix)";
  std::string advice =
      best == 0
          ? std::string(
                "no round lowered the validation loss: what the trees learn does not hold on new "
                "rows; check that the label is right and that the two sets come from one source")
          : "the model overfits from round " + std::to_string(best) + ": keep the first " +
                rounds_text(best) +
                " (or early stopping on the validation set), or regularise: shallower trees, "
                "larger min_child_weight or lambda, row and column subsampling";
  if (!strict)
    advice = "possibly: the validation set (" + std::to_string(r.validation_rows) +
             " rows) is too small to be sure, " +
             (r.valid_rise_rows > 0 ? std::to_string(r.valid_rise_rows) + " rows carry half the rise"
                                    : std::string("few rows carry the rise")) +
             "; confirm on more validation rows or by cross-validation before acting. If it "
             "holds, " +
             advice;
  TreeFinding f{TreeFlag::kOverfitting,
                best,
                rise,
                t.overfit_rise,
                "rise of the validation " + loss + " from its lowest point to the last round, "
                                                   "relative",
                detail,
                advice,
                -1};
  f.confidence = r.valid_rise_confidence;
  r.findings.push_back(f);
}

// The smallest and largest finite per-round measure over the rounds of window `w`.
std::pair<double, double> round_range(const TreeDynamicsReport& r, const WindowDynamics& w,
                                      bool data) {
  double lo = INFINITY, hi = -INFINITY;
  for (int32_t k = w.first_round; k <= w.last_round; ++k) {
    const RoundDynamics& d = r.per_round[static_cast<std::size_t>(k)];
    const double v = data ? d.contribution : d.leaf_mean_abs;
    if (!std::isfinite(v)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  return {lo, hi};
}

// A window grows when its mean exceeds exploding_growth x the smallest window mean before it,
// and two things rule out a converging model's late corrections (docs/trees.md): every round
// of the window moves more than any round of that smallest window (CatBoost's converged rounds
// alternate between near-zero ones and a few that still move, so window means of a few rounds
// jump by 2-200x with no trend; a diverging model's rounds each overshoot more than the one
// before), and, with labels, the training loss rose over the window (steps that keep lowering
// it are corrections; steps that overshoot the residuals raise it).
void exploding(TreeDynamicsReport& r, const std::vector<WindowDynamics>& windows) {
  const TreeThresholds& t = r.thresholds;
  const bool data = have_contributions(r), labels = have_train_loss(r);
  auto measure = [&](const WindowDynamics& w) { return data ? w.contribution : w.leaf_mean_abs; };
  // NaN after the window (an overflowed loss) counts as a rise.
  auto loss_rose = [&](const WindowDynamics& w) {
    return !(loss_after(r, w.last_round + 1, false) <= loss_after(r, w.first_round, false));
  };
  if (windows.size() < 2) return;
  std::size_t min_w = 0, worst = 0, worst_min = 0, first = 0;
  double ratio = 0;
  for (std::size_t w = 1; w < windows.size(); ++w) {
    const double low = measure(windows[min_w]), now = measure(windows[w]);
    const bool grows = low > 0 && now / low > t.exploding_growth &&
                       round_range(r, windows[w], data).first >
                           round_range(r, windows[min_w], data).second &&
                       (!labels || loss_rose(windows[w]));
    if (grows && now / low > ratio) {
      ratio = now / low;
      worst = w;
      worst_min = min_w;
    }
    if (grows && first == 0) first = w;
    if (now < low) min_w = w;
  }
  if (first == 0) return;
  const WindowDynamics &a = windows[worst_min], &b = windows[worst];
  const std::string what = data ? "mean |round output|" : "mean |leaf value|";
  auto span = [](const WindowDynamics& w) {
    return "rounds " + std::to_string(w.first_round) + "-" + std::to_string(w.last_round);
  };
  std::string detail = what + " " + num(measure(a)) + " in " + span(a) + ", " +
                       num(measure(b)) + " in " + span(b) + "; every round of " + span(b) +
                       " above " + num(round_range(r, a, data).second) + ", the largest of " +
                       span(a);
  if (labels)
    detail += "; training " + std::string(tree_loss_name(r.loss)) + " " +
              num(loss_after(r, b.first_round, false)) + " before " + span(b) + ", " +
              num(loss_after(r, b.last_round + 1, false)) + " after";
  r.findings.push_back(
      {TreeFlag::kExploding, windows[first].first_round, ratio, t.exploding_growth,
       "largest window mean of the " + what + " over the smallest window mean before it",
       detail,
       "the rounds' steps grow instead of shrinking from round " +
           std::to_string(windows[first].first_round) +
           ": lower the learning rate (eta), cap the step (max_delta_step), and check the labels' "
           "scale",
       -1});
}

void concentrated(TreeDynamicsReport& r) {
  const TreeThresholds& t = r.thresholds;
  if (r.features.empty()) return;
  const FeatureTotal& top = r.features[0];
  if (!(top.share > t.concentrated_share)) return;
  const std::string& name = r.feature_name(top.feature);
  std::string detail = "'" + name + "' (column " + std::to_string(top.feature) +
                       "): " + pct(top.share) + " of the " + (r.has_gain ? "gain" : "splits") +
                       " over " + std::to_string(top.splits) + " splits";
  if (r.features.size() > 1)
    detail += "; next '" + r.feature_name(r.features[1].feature) + "' " + pct(r.features[1].share);
  r.findings.push_back(
      {TreeFlag::kConcentrated, top.first_round, top.share, t.concentrated_share,
       std::string("share of the model's split ") + (r.has_gain ? "gain" : "count") +
           " on one feature",
       detail,
       "check '" + name +
           "' for leakage (a copy or function of the label, or information from after the "
           "prediction time); if it is legitimate, the model rests on one input: measure it "
           "without it",
       top.feature});
}

}  // namespace

namespace {

/// What every tree rule judges from: the report and the rules' own windows.
struct RuleInput {
  TreeDynamicsReport& report;
  const std::vector<WindowDynamics>& windows;
  int32_t window;  ///< rounds a window
};

// Each rule raises its findings, or says in not_judged what it lacked.
void judge_stagnant(const RuleInput& in) {
  TreeDynamicsReport& r = in.report;
  if (have_train_loss(r)) {
    if (!stalled(r) && have_contributions(r)) stagnant_tail(r, in.windows);
  } else {
    r.not_judged.push_back("STAGNANT from the start: " +
                           loss_missing(r, "labelled reference rows (--data with --label)"));
    if (have_contributions(r)) stagnant_tail(r, in.windows);
  }
  if (!have_contributions(r)) r.not_judged.push_back("STAGNANT later rounds: needs reference rows (--data)");
}

void judge_overfitting(const RuleInput& in) {
  TreeDynamicsReport& r = in.report;
  if (have_train_loss(r) && have_valid_loss(r))
    overfitting(r);
  else
    r.not_judged.push_back(
        "OVERFITTING: " +
        loss_missing(r,
                     "labelled reference rows (--data with --label) and labelled validation rows "
                     "(--valid)"));
}

void judge_exploding(const RuleInput& in) {
  exploding(in.report, in.windows);
  if (in.windows.size() < 2)
    in.report.not_judged.push_back("EXPLODING: needs at least 2 windows (" + rounds_text(in.report.rounds) +
                                   ", windows of " + std::to_string(in.window) + ")");
}

void judge_concentrated(const RuleInput& in) {
  TreeDynamicsReport& r = in.report;
  if (r.features.empty())
    r.not_judged.push_back("CONCENTRATED: the model has no splits");
  else if (r.num_features < 2)
    r.not_judged.push_back("CONCENTRATED: the model has one feature: it rests on it by design");
  else
    concentrated(r);
}

/// One tree rule: its flag, how it judges, and the flag it yields to (kEnd: none) with why.
struct TreeRule {
  TreeFlag flag;
  void (*judge)(const RuleInput& in);
  TreeFlag yields_to = TreeFlag::kEnd;
  const char* yield_reason = "";
};

// In this order: a rule that yields comes after the one it yields to.
const TreeRule kTreeRules[] = {
    {TreeFlag::kStagnant, judge_stagnant},
    {TreeFlag::kOverfitting, judge_overfitting},
    {TreeFlag::kExploding, judge_exploding},
    // Gains grow with the residuals: a diverging model's last rounds hold nearly all of it, so
    // the share says which feature those rounds split on, not what the model rests on.
    {TreeFlag::kConcentrated, judge_concentrated, TreeFlag::kExploding,
     "the gain of an exploding model is its last rounds'"},
};
static_assert(std::size(kTreeRules) == kTreeFlagCount, "kTreeRules: one rule per tree flag");

bool raised(const TreeDynamicsReport& r, TreeFlag flag) {
  for (const TreeFinding& f : r.findings)
    if (f.flag == flag) return true;
  return false;
}

}  // namespace

void judge_trees(TreeDynamicsReport& r) {
  r.findings.clear();
  r.not_judged.clear();
  // The rules' own scale, not the views' windows (thresholds.window): a way of looking at the
  // rounds must not change what is said of them.
  const int32_t window = rule_window(r.rounds);
  const std::vector<WindowDynamics> own = r.window == window ? std::vector<WindowDynamics>{} : windows_of(r, window);
  const std::vector<WindowDynamics>& windows = r.window == window ? r.windows : own;  // the views' when the same
  if (r.rounds == 0) {
    r.not_judged.push_back("all rules: the model has no trees");
    return;
  }
  for (const TreeRule& rule : kTreeRules) {
    if (rule.yields_to != TreeFlag::kEnd && raised(r, rule.yields_to)) {
      r.not_judged.push_back(std::string(tree_flag_name(rule.flag)) + ": " + rule.yield_reason);
      continue;
    }
    rule.judge({r, windows, window});
  }
}

}  // namespace gradscope::tree_internal
