// One pass over the trees in round order, each tree evaluated once per row: the round's
// outputs, and a running raw score per row and output to which every tree is added as the
// library adds it, so the loss after round r costs O(rows), not a prediction of r rounds.
#include <algorithm>
#include <functional>
#include <cmath>
#include <limits>
#include <optional>

#include "trees/internal/parts.h"
#include "trees/internal/running_scores.h"

namespace gradscope::tree_internal {
namespace {

using Atoms = std::vector<std::pair<double, double>>;

// The distribution of one output's round values over the rows as sorted atoms. One tree per
// output: its leaves weighted by the rows they hold (O(leaves log leaves)); several (parallel
// trees, forests): every row's sum (O(rows log rows)).
Atoms atoms_of(const std::vector<double>& values, std::size_t k, std::size_t output,
               std::size_t rows) {
  Atoms a;
  a.reserve(rows);
  for (std::size_t i = 0; i < rows; ++i)
    a.emplace_back(values[i * k + output], 1.0 / static_cast<double>(rows));
  std::sort(a.begin(), a.end());
  return a;
}

// The first minimum of the validation curve over 0..rounds rounds (0: the base score alone).
int32_t best_rounds(const TreeDynamicsReport& report) {
  double best = report.base_valid_loss;
  int32_t k = 0;
  for (const RoundDynamics& r : report.per_round)
    if (r.valid_loss < best) {
      best = r.valid_loss;
      k = r.round + 1;
    }
  return k;
}

// How far the per-row validation loss rose from the best prefix to the whole model, in
// standard errors: mean(d) / (sd(d) / sqrt(n)) of the paired differences d_i. A rise a few
// rows could make by chance stays below a few standard errors. Also how few rows carry half of
// the rise, and the misclassified rows at the best prefix (a second O(best x rows) pass).
void describe_rise(const TreeEnsemble& m, const TreeData& valid, int32_t best,
                   const std::vector<double>& final_losses, TreeDynamicsReport& report) {
  RunningScores at_best(m, valid);
  for (const Tree& tree : m.trees) {
    if (tree.round >= best) break;
    for (std::size_t i = 0; i < valid.rows; ++i)
      at_best.add(i, tree.output, tree_output(m, tree, valid.row(i)));
  }
  at_best.loss(report.loss, best, nullptr);
  report.valid_errors_best = at_best.errors(report.loss, best);
  const std::vector<double>& base = at_best.losses();
  const double n = static_cast<double>(valid.rows);
  double mean = 0, m2 = 0;
  std::vector<double> rises;
  for (std::size_t i = 0; i < valid.rows; ++i) {  // Welford: one pass, no cancellation
    const double d = final_losses[i] - base[i], delta = d - mean;
    mean += delta / static_cast<double>(i + 1);
    m2 += delta * (d - mean);
    if (d > 0) rises.push_back(d);
  }
  // The fewest rows whose increases add up to half the net rise: the largest ones first.
  std::sort(rises.begin(), rises.end(), std::greater<double>());
  double carried = 0;
  for (std::size_t i = 0; i < rises.size() && mean > 0; ++i) {
    carried += rises[i];
    if (carried >= 0.5 * mean * n) {
      report.valid_rise_rows = static_cast<int64_t>(i + 1);
      break;
    }
  }
  if (valid.rows < 2) return;
  const double se = std::sqrt(m2 / (n - 1) / n);
  if (se > 0)
    report.valid_rise_z = mean / se;
  else
    report.valid_rise_z = mean > 0 ? std::numeric_limits<double>::infinity() : 0.0;
}

Atoms leaf_atoms(const TreeEnsemble& m, const Tree& tree, const std::vector<int64_t>& counts,
                 std::size_t rows) {
  Atoms a;
  for (std::size_t leaf = 0; leaf < counts.size(); ++leaf)
    if (counts[leaf] > 0)
      a.emplace_back(leaf_output(m, tree, static_cast<int32_t>(leaf)),
                     static_cast<double>(counts[leaf]) / static_cast<double>(rows));
  std::sort(a.begin(), a.end());
  return a;
}

}  // namespace

double wasserstein1(const Atoms& a, const Atoms& b) {
  if (a.empty() || b.empty()) return std::numeric_limits<double>::quiet_NaN();
  constexpr double kEnd = std::numeric_limits<double>::infinity();
  std::size_t i = 0, j = 0;
  double fa = 0, fb = 0, area = 0, x = std::min(a[0].first, b[0].first);
  while (i < a.size() || j < b.size()) {
    const double next =
        std::min(i < a.size() ? a[i].first : kEnd, j < b.size() ? b[j].first : kEnd);
    area += std::fabs(fa - fb) * (next - x);
    x = next;
    while (i < a.size() && a[i].first == next) fa += a[i++].second;
    while (j < b.size() && b[j].first == next) fb += b[j++].second;
  }
  return area;
}

void measure_data(const TreeEnsemble& m, const TreeDynamicsInput& in, TreeDynamicsReport& report) {
  const TreeData* ref = in.reference;
  const bool train_loss = ref && ref->labelled() && report.loss != TreeLoss::kNone;
  const bool valid_loss =
      in.validation && in.validation->labelled() && report.loss != TreeLoss::kNone;
  std::optional<RunningScores> train, valid;
  if (ref) train.emplace(m, *ref);
  if (valid_loss) valid.emplace(m, *in.validation);
  if (train_loss) report.base_train_loss = train->loss(report.loss, 0, nullptr);
  if (valid_loss) report.base_valid_loss = valid->loss(report.loss, 0, nullptr);

  const std::size_t k = static_cast<std::size_t>(m.num_outputs), rows = ref ? ref->rows : 0;
  std::vector<double> round_out;
  std::vector<Atoms> atoms(k), previous(k);
  std::vector<int64_t> counts;
  std::size_t t = 0;
  for (RoundDynamics& r : report.per_round) {
    if (ref) round_out.assign(rows * k, 0.0);
    std::vector<int> trees_of(k, 0);
    for (; t < m.trees.size() && m.trees[t].round == r.round; ++t) {
      const Tree& tree = m.trees[t];
      const std::size_t out = static_cast<std::size_t>(tree.output);
      if (ref) {
        counts.assign(tree.oblivious() ? tree.leaf_values.size() : tree.nodes.size(), 0);
        for (std::size_t i = 0; i < rows; ++i) {
          const int32_t leaf = leaf_of(m, tree, ref->row(i));
          const double v = leaf_output(m, tree, leaf);
          ++counts[static_cast<std::size_t>(leaf)];
          round_out[i * k + out] += v;
          train->add(i, tree.output, v);
        }
        if (trees_of[out]++ == 0) atoms[out] = leaf_atoms(m, tree, counts, rows);
      }
      if (valid)
        for (std::size_t i = 0; i < in.validation->rows; ++i)
          valid->add(i, tree.output, tree_output(m, tree, in.validation->row(i)));
    }
    if (ref) {
      r.outputs.resize(k);
      Stats all;
      double velocity = 0;
      for (std::size_t c = 0; c < k; ++c) {
        r.outputs[c] =
            compute(TensorView::strided(round_out.data() + c, DType::kFloat64,
                                        {static_cast<int64_t>(rows)}, {static_cast<int64_t>(k)}));
        all = merge(all, r.outputs[c]);
        if (trees_of[c] != 1)
          atoms[c] = trees_of[c] == 0 ? Atoms{{0.0, 1.0}} : atoms_of(round_out, k, c, rows);
        if (r.round > 0) velocity += wasserstein1(atoms[c], previous[c]);
      }
      std::swap(atoms, previous);
      r.contribution = all.mean_abs();
      r.contribution_max = all.has_finite() ? all.max_abs : RoundDynamics::kNone;
      if (r.round > 0) r.velocity = velocity / static_cast<double>(k);
    }
    if (train_loss) r.train_loss = train->loss(report.loss, r.round + 1, &r.train_row_loss);
    if (valid_loss) r.valid_loss = valid->loss(report.loss, r.round + 1, &r.valid_row_loss);
  }
  if (!valid_loss) return;
  report.best_valid_rounds = best_rounds(report);
  report.valid_errors_last = valid->errors(report.loss, report.rounds);
  if (report.best_valid_rounds < report.rounds) {
    describe_rise(m, *in.validation, report.best_valid_rounds, valid->losses(), report);
    report.valid_rise_confidence = rise_confidence(m, *in.validation, report);
  }
}

}  // namespace gradscope::tree_internal
