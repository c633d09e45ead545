// How sure a validation rise is: a paired sign-flip permutation test of "the
// whole model is worse than an earlier prefix", with the maximum over the
// prefixes as its statistic so that picking the best prefix (the lowest point
// of a noisy curve) is paid for (docs/trees.md, "OVERFITTING's confidence").
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "trees/internal/parts.h"
#include "trees/internal/running_scores.h"

namespace gradscope::tree_internal {
namespace {

// Bounds that keep the test O(permutations x rows x prefixes) small whatever
// the model: a prefix every few rounds already carries the curve (neighbouring
// prefixes' losses are nearly the same), and thousands of rows resolve a rise
// far below anything a rule would report.
constexpr std::size_t kMaxPrefixes = 64;
constexpr std::size_t kMaxRows = 5000;
constexpr int kPermutations = 999; // p in steps of 1 / 1000
constexpr uint64_t kSeed = 33; // fixed: the same run gives the same confidence

// The prefixes compared with the whole model: every k the rule could name (at
// least overfit_rounds before the end), evenly thinned to kMaxPrefixes, and
// always the best.
std::vector<int32_t> prefixes_of(const TreeDynamicsReport &r) {
  const int32_t last = r.rounds - r.thresholds.overfit_rounds;
  std::vector<int32_t> out;
  if (last >= 0) {
    const std::size_t n = static_cast<std::size_t>(last) + 1;
    const std::size_t take = std::min(n, kMaxPrefixes - 1);
    for (std::size_t j = 0; j < take; ++j)
      out.push_back(
          static_cast<int32_t>(take == 1 ? 0 : j * (n - 1) / (take - 1)));
  }
  out.push_back(r.best_valid_rounds);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

// Every k-th row when there are more than kMaxRows (a deterministic, unbiased
// subset).
TreeData rows_for_test(const TreeData &valid) {
  if (valid.rows <= kMaxRows)
    return valid;
  std::vector<std::size_t> index;
  const std::size_t step = (valid.rows + kMaxRows - 1) / kMaxRows;
  for (std::size_t i = 0; i < valid.rows; i += step)
    index.push_back(i);
  return select_rows(valid, index);
}

} // namespace

double rise_confidence(const TreeEnsemble &m, const TreeData &validation,
                       const TreeDynamicsReport &r) {
  constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  if (r.best_valid_rounds < 0 || r.best_valid_rounds >= r.rounds)
    return kNone;
  const TreeData valid = rows_for_test(validation);
  const std::vector<int32_t> prefixes = prefixes_of(r);
  const std::size_t n = valid.rows, kp = prefixes.size();
  // Per-row losses of every compared prefix, then of the whole model: one pass
  // over the trees.
  std::vector<std::vector<double>> at(kp);
  RunningScores scores(m, valid);
  std::size_t t = 0, next = 0;
  for (int32_t k = 0; k <= r.rounds; ++k) {
    if (next < kp && prefixes[next] == k) {
      scores.loss(r.loss, k, nullptr);
      at[next++] = scores.losses();
    }
    for (; t < m.trees.size() && m.trees[t].round == k; ++t)
      for (std::size_t i = 0; i < n; ++i)
        scores.add(i, m.trees[t].output,
                   tree_output(m, m.trees[t], valid.row(i)));
  }
  scores.loss(r.loss, r.rounds, nullptr);
  const std::vector<double> &final_loss = scores.losses();
  // e[i * kp + j] = d_ij / ||d_j||, d_ij = final - prefix j on row i. sum_i
  // e_ij is a monotone function of prefix j's paired t statistic and its norm
  // is unchanged by flipping signs, so flipping rows' signs and taking the
  // maximum over prefixes is the max-T permutation test (Westfall & Young,
  // Resampling-Based Multiple Testing, 1993), exact under the null that each
  // row's differences are symmetric about 0.
  std::vector<double> e(n * kp, 0.0);
  std::vector<bool> usable(kp, false);
  for (std::size_t j = 0; j < kp; ++j) {
    double ss = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double d = final_loss[i] - at[j][i];
      e[i * kp + j] = d;
      ss += d * d;
    }
    if (!(ss > 0) || !std::isfinite(ss))
      continue; // no difference (or a non-finite loss)
    usable[j] = true;
    for (std::size_t i = 0; i < n; ++i)
      e[i * kp + j] /= std::sqrt(ss);
  }
  auto statistic = [&](const std::vector<double> &sums) {
    double top = -std::numeric_limits<double>::infinity();
    for (std::size_t j = 0; j < kp; ++j)
      if (usable[j])
        top = std::max(top, sums[j]);
    return top;
  };
  std::vector<double> sums(kp, 0.0);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = 0; j < kp; ++j)
      sums[j] += e[i * kp + j];
  const double observed = statistic(sums);
  if (!std::isfinite(observed))
    return kNone;
  // Signs from the generator's raw bits: the same on every standard library.
  std::mt19937_64 gen(kSeed);
  int as_large = 0;
  for (int b = 0; b < kPermutations; ++b) {
    std::fill(sums.begin(), sums.end(), 0.0);
    uint64_t bits = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (i % 64 == 0)
        bits = gen();
      const double sign = (bits >> (i % 64)) & 1 ? 1.0 : -1.0;
      const double *row = &e[i * kp];
      for (std::size_t j = 0; j < kp; ++j)
        sums[j] += sign * row[j];
    }
    // A relative tolerance so the identity permutation's own sum, rounded
    // differently, counts.
    if (statistic(sums) >= observed - 1e-12 * std::fabs(observed))
      ++as_large;
  }
  const double p = (1.0 + as_large) / (1.0 + kPermutations);
  return 1 - p;
}

} // namespace gradscope::tree_internal
