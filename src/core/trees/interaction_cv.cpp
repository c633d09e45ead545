// Testing an interaction suggestion before it is made: does the pair's
// interaction term lower the held-out loss of a model that already has every
// feature's (nonlinear) main effect? docs/trees.md, "Testing a pair".
#include <algorithm>
#include <cmath>
#include <random>

#include "gradscope/core/trees/interactions.h"

namespace gradscope {
namespace {

constexpr std::size_t kMaxRows = 5000;
constexpr int kBins =
    8; // quantile bins per feature, plus one for missing values
constexpr double kRidge =
    1.0; // per bin effect and for the interaction coefficient
constexpr int kSweeps = 30; // coordinate Newton sweeps of the additive model
constexpr uint64_t kFoldSeed = 41; // fixed: the same data gets the same folds

double sigmoid(double z) { return 1 / (1 + std::exp(-z)); }

double row_loss(InteractionModel m, double eta, double y) {
  if (m == InteractionModel::kLeastSquares)
    return (eta - y) * (eta - y);
  // log(1 + e^eta) - y eta, stable for large |eta|.
  return (eta > 0 ? eta + std::log1p(std::exp(-eta))
                  : std::log1p(std::exp(eta))) -
         y * eta;
}

// First and second derivative of the row loss in eta (least squares halved: the
// same fit).
std::pair<double, double> derivatives(InteractionModel m, double eta,
                                      double y) {
  if (m == InteractionModel::kLeastSquares)
    return {eta - y, 1.0};
  const double p = sigmoid(eta);
  return {p - y, std::max(p * (1 - p), 1e-12)};
}

// The rows the test runs on: every k-th beyond kMaxRows, labels standardised
// for least squares so that the ridge penalty means the same whatever the
// label's units.
struct Rows {
  std::vector<std::size_t> index;
  std::vector<double> y;
  std::vector<int> fold;
};

Rows rows_of(const TreeData &d, InteractionModel m) {
  Rows r;
  const std::size_t step = (d.rows + kMaxRows - 1) / kMaxRows;
  for (std::size_t i = 0; i < d.rows; i += std::max<std::size_t>(step, 1))
    r.index.push_back(i);
  for (std::size_t i : r.index)
    r.y.push_back(d.y[i]);
  if (m == InteractionModel::kLeastSquares) {
    const double n = static_cast<double>(r.y.size());
    const double mean = std::accumulate(r.y.begin(), r.y.end(), 0.0) / n;
    double var = 0;
    for (double y : r.y)
      var += (y - mean) * (y - mean) / n;
    const double sd = var > 0 ? std::sqrt(var) : 1.0;
    for (double &y : r.y)
      y = (y - mean) / sd;
  }
  // Folds by a fixed shuffle (Fisher-Yates on the generator's raw output, as
  // split_rows): a file sorted by label still gets folds that mix the labels.
  std::vector<std::size_t> order(r.index.size());
  std::iota(order.begin(), order.end(), 0);
  std::mt19937_64 gen(kFoldSeed);
  for (std::size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[gen() % i]);
  r.fold.resize(order.size());
  for (std::size_t k = 0; k < order.size(); ++k)
    r.fold[order[k]] = static_cast<int>(k % kInteractionFolds);
  return r;
}

// Each row's bin per feature: quantile edges over the test's rows (no labels
// used), kBins for a missing value.
std::vector<int> bins_of(const TreeData &d, const Rows &rows) {
  const std::size_t n = rows.index.size(), f_count = d.cols;
  std::vector<int> bin(n * f_count, kBins);
  std::vector<double> v;
  for (std::size_t f = 0; f < f_count; ++f) {
    v.clear();
    for (std::size_t i : rows.index)
      if (std::isfinite(d.row(i)[f]))
        v.push_back(d.row(i)[f]);
    if (v.empty())
      continue;
    std::sort(v.begin(), v.end());
    std::vector<double> edges;
    for (int b = 1; b < kBins; ++b)
      edges.push_back(v[v.size() * static_cast<std::size_t>(b) / kBins]);
    for (std::size_t k = 0; k < n; ++k) {
      const double x = d.row(rows.index[k])[f];
      if (std::isfinite(x))
        bin[k * f_count + f] = static_cast<int>(
            std::upper_bound(edges.begin(), edges.end(), x) - edges.begin());
    }
  }
  return bin;
}

// The additive model fitted on the rows outside `fold`: an intercept and a
// ridge-penalised effect per feature and bin, by cyclic Newton steps per
// feature (a feature's bins are disjoint, so its Hessian block is diagonal:
// backfitting, Hastie & Tibshirani 1990). Returns every row's linear predictor.
std::vector<double> fit_additive(const Rows &rows, const std::vector<int> &bin,
                                 std::size_t f_count, int fold,
                                 InteractionModel m) {
  const std::size_t n = rows.y.size(), nb = kBins + 1;
  std::vector<double> beta(f_count * nb, 0.0), eta(n, 0.0), g(nb), h(nb);
  for (int sweep = 0; sweep < kSweeps; ++sweep) {
    double change = 0, g0 = 0, h0 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      if (rows.fold[i] == fold)
        continue;
      const auto [d1, d2] = derivatives(m, eta[i], rows.y[i]);
      g0 += d1;
      h0 += d2;
    }
    const double step0 = -g0 / h0; // the intercept, unpenalised
    for (double &e : eta)
      e += step0;
    for (std::size_t f = 0; f < f_count; ++f) {
      std::fill(g.begin(), g.end(), 0.0);
      std::fill(h.begin(), h.end(), 0.0);
      for (std::size_t i = 0; i < n; ++i) {
        if (rows.fold[i] == fold)
          continue;
        const auto [d1, d2] = derivatives(m, eta[i], rows.y[i]);
        g[static_cast<std::size_t>(bin[i * f_count + f])] += d1;
        h[static_cast<std::size_t>(bin[i * f_count + f])] += d2;
      }
      std::vector<double> step(nb);
      for (std::size_t b = 0; b < nb; ++b) {
        double &w = beta[f * nb + b];
        step[b] = -(g[b] + kRidge * w) / (h[b] + kRidge);
        w += step[b];
        change = std::max(change, std::fabs(step[b]));
      }
      for (std::size_t i = 0; i < n; ++i)
        eta[i] += step[static_cast<std::size_t>(bin[i * f_count + f])];
    }
    if (change < 1e-7)
      break;
  }
  return eta;
}

// The interaction coefficient on top of the additive model (its predictor as an
// offset), fitted on the rows outside `fold` with the same ridge: Newton steps
// on one parameter.
double fit_interaction(const Rows &rows, const std::vector<double> &eta,
                       const std::vector<double> &w, int fold,
                       InteractionModel m) {
  double gamma = 0;
  for (int step = 0; step < 25; ++step) {
    double g = kRidge * gamma, h = kRidge;
    for (std::size_t i = 0; i < eta.size(); ++i) {
      if (rows.fold[i] == fold)
        continue;
      const auto [d1, d2] = derivatives(m, eta[i] + gamma * w[i], rows.y[i]);
      g += d1 * w[i];
      h += d2 * w[i] * w[i];
    }
    const double delta = -g / h;
    gamma += delta;
    if (std::fabs(delta) < 1e-9)
      break;
  }
  return gamma;
}

// The product of the two standardised features (over the rows outside `fold`);
// 0 where one is missing.
std::vector<double> product_term(const TreeData &d, const Rows &rows, int32_t a,
                                 int32_t b, int fold) {
  auto standardised = [&](int32_t f) {
    double n = 0, mean = 0, m2 = 0;
    for (std::size_t k = 0; k < rows.index.size(); ++k) {
      const double x = d.row(rows.index[k])[f];
      if (rows.fold[k] == fold || !std::isfinite(x))
        continue;
      ++n;
      const double delta = x - mean;
      mean += delta / n;
      m2 += delta * (x - mean);
    }
    const double sd = n > 1 && m2 > 0 ? std::sqrt(m2 / (n - 1)) : 1.0;
    std::vector<double> z(rows.index.size(), 0.0);
    for (std::size_t k = 0; k < z.size(); ++k) {
      const double x = d.row(rows.index[k])[f];
      if (std::isfinite(x))
        z[k] = (x - mean) / sd;
    }
    return z;
  };
  std::vector<double> za = standardised(a), zb = standardised(b);
  for (std::size_t k = 0; k < za.size(); ++k)
    za[k] *= zb[k];
  return za;
}

} // namespace

void test_interactions(InteractionReport &report, const TreeData &data,
                       InteractionModel m) {
  if (!data.labelled() ||
      data.rows < 2 * static_cast<std::size_t>(kInteractionFolds) ||
      report.kept.empty())
    return;
  const Rows rows = rows_of(data, m);
  const std::vector<int> bin = bins_of(data, rows);
  const std::size_t n = rows.y.size();
  std::vector<std::vector<double>> eta(kInteractionFolds);
  for (int fold = 0; fold < kInteractionFolds; ++fold)
    eta[static_cast<std::size_t>(fold)] =
        fit_additive(rows, bin, data.cols, fold, m);
  // Pairs in rank order, each tested on the model that already holds the pairs
  // suggested before it: a pair that only stands in for a stronger one (texture
  // x radius error beside texture x radius, r 0.67 between the radii) adds
  // nothing then. Sequential, so Bonferroni (m x p) rather than Holm.
  std::vector<InteractionPair> pairs = report.kept;
  const double tests = static_cast<double>(pairs.size());
  for (std::size_t j = 0; j < pairs.size(); ++j) {
    // Per row, held out once: the current model's loss minus the loss with the
    // interaction.
    std::vector<double> base(n), better(n);
    std::vector<std::vector<double>> term(kInteractionFolds);
    std::vector<double> gamma(kInteractionFolds);
    for (int fold = 0; fold < kInteractionFolds; ++fold) {
      const auto f = static_cast<std::size_t>(fold);
      const std::vector<double> &e = eta[f];
      term[f] = product_term(data, rows, pairs[j].a, pairs[j].b, fold);
      gamma[f] = fit_interaction(rows, e, term[f], fold, m);
      for (std::size_t i = 0; i < n; ++i) {
        if (rows.fold[i] != fold)
          continue;
        base[i] = row_loss(m, e[i], rows.y[i]);
        better[i] =
            base[i] - row_loss(m, e[i] + gamma[f] * term[f][i], rows.y[i]);
      }
    }
    double total = 0, mean = 0, m2 = 0;
    for (std::size_t i = 0; i < n; ++i) {
      total += base[i];
      const double delta = better[i] - mean;
      mean += delta / static_cast<double>(i + 1);
      m2 += delta * (better[i] - mean);
    }
    const double se =
        std::sqrt(m2 / static_cast<double>(n - 1) / static_cast<double>(n));
    pairs[j].cv_gain = total > 0 ? mean * static_cast<double>(n) / total : 0.0;
    // One-sided: P(Z >= z) for the paired z of the per-row reductions.
    const double raw = se > 0 ? 0.5 * std::erfc(mean / se / std::sqrt(2.0))
                              : (mean > 0 ? 0.0 : 1.0);
    pairs[j].p_value = std::min(1.0, raw * tests);
    if (!(pairs[j].cv_gain > 0 && pairs[j].p_value < kInteractionAlpha))
      continue;
    for (std::size_t f = 0; f < eta.size(); ++f)  // the pair joins the model
      for (std::size_t i = 0; i < n; ++i)
        eta[f][i] += gamma[f] * term[f][i];
  }
  report.tested = true;
  report.test_rows = static_cast<int64_t>(n);
  report.kept.clear();
  for (const InteractionPair &p : pairs)
    (p.cv_gain > 0 && p.p_value < kInteractionAlpha ? report.kept
                                                    : report.no_evidence)
        .push_back(p);
}

} // namespace gradscope
