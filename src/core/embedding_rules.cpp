// The embedding rules: pure functions of EmbeddingRows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "gradscope/core/embedding_math.h"
#include "gradscope/core/embedding_report.h"

namespace gradscope {
namespace {
constexpr double kStricter = 1.25;  // confidence: thresholds made 25% stricter

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

// Linear ramp: 0 at the threshold, 1 at the stricter threshold.
double ramp(double value, double threshold, double stricter) {
  if (stricter == threshold) return 1.0;
  return std::clamp((value - threshold) / (stricter - threshold), 0.0, 1.0);
}
}  // namespace

bool is_zombie(const EmbeddingRows& rows, int64_t row, double median_velocity,
               const Thresholds& t, double strictness) {
  return rows.exposure(row) > strictness * t.zombie_min_exposure &&
         rows.oscillation(row) < strictness * t.zombie_oscillation &&
         rows.velocity(row) > strictness * t.zombie_velocity_ratio * median_velocity;
}

double median_exposed_velocity(const EmbeddingRows& rows) {
  std::vector<float> v;
  for (int64_t r = 0; r < rows.rows(); ++r)
    if (rows.exposure(r) > 0) v.push_back(rows.velocity(r));
  if (v.empty()) return 0.0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) m = 0.5 * (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid)));
  return m;
}

EmbeddingReport diagnose_embedding(const std::string& layer, const EmbeddingRows& rows,
                                   int64_t tracked_steps, const EmbeddingRuleOptions& o,
                                   const std::vector<double>& singular_values,
                                   int64_t sampled_rows) {
  const Thresholds& t = o.thresholds;
  const auto max_ex = static_cast<std::size_t>(std::max(0, o.max_examples));
  EmbeddingReport rep;
  rep.layer = layer;
  EmbeddingStats& s = rep.stats;
  s.num_embeddings = rows.rows();
  s.dim = rows.dim();
  s.tracked_steps = tracked_steps;
  s.state_bytes = rows.rows() * EmbeddingRows::bytes_per_row(rows.dim());

  std::vector<double> exposure;
  std::vector<int64_t> never_exposed, never_updated;
  std::vector<std::pair<double, int64_t>> saliency;
  for (int64_t r = 0; r < rows.rows(); ++r) {
    const uint32_t e = rows.exposure(r);
    if (e == 0) {
      if (never_exposed.size() < max_ex) never_exposed.push_back(r);
      ++s.never_exposed_rows;
      continue;
    }
    exposure.push_back(e);
    if (rows.updates(r) == 0) {
      if (never_updated.size() < max_ex) never_updated.push_back(r);
      ++s.never_updated_rows;
    }
    // GradTracer's frequency-aware saliency: velocity / (exposure + 1).
    saliency.emplace_back(rows.velocity(r) / (e + 1.0), r);
  }
  s.exposed_rows = static_cast<int64_t>(exposure.size());
  s.active_coverage_pct = rows.rows() ? 100.0 * s.exposed_rows / rows.rows() : 0.0;
  s.popularity_gini = gini(exposure);
  s.exposure_entropy = normalized_entropy(exposure);
  s.median_velocity = median_exposed_velocity(rows);
  if (!saliency.empty()) {
    const std::size_t k = std::min(max_ex, saliency.size());
    std::partial_sort(saliency.begin(), saliency.begin() + static_cast<std::ptrdiff_t>(k), saliency.end());
    for (std::size_t i = 0; i < k; ++i) s.lowest_saliency_rows.push_back(saliency[i].second);
    std::vector<double> sv;
    for (auto& p : saliency) sv.push_back(p.first);
    const std::size_t mid = sv.size() / 2;
    std::nth_element(sv.begin(), sv.begin() + static_cast<std::ptrdiff_t>(mid), sv.end());
    s.saliency_median = sv[mid];
  }
  if (!singular_values.empty()) {
    s.effective_rank = effective_rank(singular_values);
    s.effective_rank_rows = sampled_rows;
  }

  // ZOMBIE_ROWS (GradTracer's rule, thresholds in Thresholds).
  std::vector<int64_t> zombies;
  int64_t strict = 0;
  for (int64_t r = 0; r < rows.rows(); ++r) {
    if (rows.exposure(r) == 0 || !is_zombie(rows, r, s.median_velocity, t)) continue;
    ++s.zombie_rows;
    if (zombies.size() < max_ex) zombies.push_back(r);
    if (is_zombie(rows, r, s.median_velocity, t, kStricter)) ++strict;
  }
  if (s.zombie_rows > 0) {
    EmbeddingDiagnostic d;
    d.type = "ZOMBIE_ROWS";
    d.premise = num(s.zombie_rows) + " of " + num(s.exposed_rows) +
                " exposed rows oscillate: exposure > " + num(t.zombie_min_exposure) +
                ", oscillation EMA < " + num(t.zombie_oscillation) + ", velocity > " +
                num(t.zombie_velocity_ratio) + " x median velocity " + num(s.median_velocity) + ".";
    d.implies = "These rows move a lot but their successive updates point in opposite "
                "directions: they thrash instead of converging.";
    d.action = "LOWER_EMBEDDING_LR_OR_ENABLE_AUTO_FIX";
    d.expected_effect = "Damped zombie updates (SNR-scaled) let the rows settle; check NDCG.";
    d.confidence = static_cast<double>(strict) / s.zombie_rows;
    d.evidence = {{"zombie_rows", double(s.zombie_rows)}, {"exposed_rows", double(s.exposed_rows)},
                  {"median_velocity", s.median_velocity},
                  {"zombie_min_exposure", t.zombie_min_exposure},
                  {"zombie_oscillation", t.zombie_oscillation},
                  {"zombie_velocity_ratio", t.zombie_velocity_ratio},
                  {"rows_passing_stricter_thresholds", double(strict)}};
    d.example_rows = zombies;
    rep.diagnostics.push_back(std::move(d));
  }

  // DEAD_ROWS: never exposed, or exposed but never really updated (exact counts).
  const int64_t dead = s.never_exposed_rows + s.never_updated_rows;
  if (rows.rows() > 0 && static_cast<double>(dead) / rows.rows() > o.dead_rows_frac) {
    EmbeddingDiagnostic d;
    d.type = "DEAD_ROWS";
    d.premise = num(s.never_exposed_rows) + " of " + num(s.num_embeddings) +
                " rows were never in a batch and " + num(s.never_updated_rows) +
                " were exposed but never moved by more than " +
                num(t.update_ratio_lo) + " x their norm in " + num(tracked_steps) + " steps.";
    d.implies = "Dead rows keep their initial values: cold-start items, broken sampling, or "
                "a zero learning rate for them.";
    d.action = "CHECK_NEGATIVE_SAMPLING_OR_SHARE_COLD_START_EMBEDDINGS";
    d.expected_effect = "Every row the model scores receives training signal.";
    d.confidence = 1.0;
    d.evidence = {{"never_exposed_rows", double(s.never_exposed_rows)},
                  {"never_updated_rows", double(s.never_updated_rows)},
                  {"num_embeddings", double(s.num_embeddings)},
                  {"update_ratio_lo", t.update_ratio_lo},
                  {"dead_rows_frac", o.dead_rows_frac}};
    d.example_rows = never_exposed;
    for (int64_t r : never_updated)
      if (d.example_rows.size() < 2 * max_ex) d.example_rows.push_back(r);
    rep.diagnostics.push_back(std::move(d));
  }

  // POPULARITY_BIAS: Gini of exposure counts; stricter threshold 25% closer to 1.
  if (s.popularity_gini > o.popularity_gini) {
    EmbeddingDiagnostic d;
    d.type = "POPULARITY_BIAS";
    d.premise = "Exposure is concentrated: Gini " + num(s.popularity_gini) + " > " +
                num(o.popularity_gini) + " over " + num(s.exposed_rows) +
                " exposed rows (normalised entropy " + num(s.exposure_entropy) + ").";
    d.implies = "Training optimises mostly popular rows; long-tail rows learn little.";
    d.action = "APPLY_LOG_Q_CORRECTION_OR_INVERSE_FREQUENCY_SAMPLING";
    d.expected_effect = "More balanced exposure and better long-tail coverage.";
    d.confidence = ramp(s.popularity_gini, o.popularity_gini,
                        o.popularity_gini + (1.0 - o.popularity_gini) * (kStricter - 1.0));
    d.evidence = {{"popularity_gini", s.popularity_gini},
                  {"threshold", o.popularity_gini},
                  {"exposure_entropy", s.exposure_entropy},
                  {"exposed_rows", double(s.exposed_rows)}};
    rep.diagnostics.push_back(std::move(d));
  }

  // REPRESENTATION_COLLAPSE: effective rank (Roy & Vetterli 2007) of sampled rows.
  if (s.effective_rank >= 0 && sampled_rows > 0) {
    const double full = static_cast<double>(std::min<int64_t>(rows.dim(), sampled_rows));
    const double ratio = s.effective_rank / full;
    if (ratio < o.collapse_ratio) {
      EmbeddingDiagnostic d;
      d.type = "REPRESENTATION_COLLAPSE";
      d.premise = "Effective rank " + num(s.effective_rank) + " of " + num(full) +
                  " possible (ratio " + num(ratio) + " < " + num(o.collapse_ratio) + ") over " +
                  num(sampled_rows) + " sampled rows.";
      d.implies = "Rows occupy a low-dimensional subspace: the table encodes few distinct "
                  "directions.";
      d.action = "ADD_UNIFORMITY_REGULARISER_OR_LOWER_LR";
      d.expected_effect = "Higher effective rank and more distinguishable rows.";
      d.confidence = ramp(-ratio, -o.collapse_ratio, -o.collapse_ratio / kStricter);
      d.evidence = {{"effective_rank", s.effective_rank}, {"possible_rank", full},
                    {"collapse_ratio", o.collapse_ratio}, {"sampled_rows", double(sampled_rows)}};
      rep.diagnostics.push_back(std::move(d));
    }
  }
  return rep;
}

}  // namespace gradscope
