// The embedding rules: pure functions of EmbeddingRows.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

#include "gradscope/core/vocabulary/finding_types.h"
#include "gradscope/core/vocabulary/numbers.h"
#include "gradscope/core/embedding/math.h"
#include "gradscope/core/embedding/report.h"
#include "gradscope/core/embedding/zombie_null.h"

namespace gradscope {
namespace {
constexpr double kStricter = 1.25;  // confidence: thresholds made 25% stricter

// Four significant digits, whole numbers (counts) in full (findings/numbers.h).
std::string num(double v) { return shown_number(v); }

// Linear ramp: 0 at the threshold, 1 at the stricter threshold.
double ramp(double value, double threshold, double stricter) {
  if (stricter == threshold) return 1.0;
  return std::clamp((value - threshold) / (stricter - threshold), 0.0, 1.0);
}

double median_of(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}

constexpr const char* kZombieImplies =
    "These rows move a lot but their successive updates point in opposite directions: they "
    "thrash instead of converging.";
constexpr const char* kZombieAction = "LOWER_EMBEDDING_LR_OR_ENABLE_AUTO_FIX";
constexpr const char* kZombieAdvice =
    "Lower this table's learning rate (or its weight decay, if that is what overshoots), or enable the "
    "tracker's auto_fix to damp these rows' gradients.";
constexpr const char* kZombieEffect = "The rows settle; check HR@k or NDCG@k before and after.";

// Where the table's rows stand on one ladder of windows (long: zombie_window cosines; short:
// a quarter of that, for rows too rare for two long windows).
struct Ladder {
  int window = 0;
  ZombieNull null;
  int64_t judged = 0, flagged = 0;
};

std::string null_text(const Ladder& l, int64_t dim) {
  const ZombieNull& n = l.null;
  if (!n.estimated)
    return "chance from random directions in " + num(dim) + " dimensions, the two windows taken as one (" +
           num(n.rows) + " rows are too few to estimate it from the table)";
  if (n.table_oscillates)
    return "this table's typical row reverses itself (median window " + num(n.centre) + " < " +
           "the effect): chance from random directions in " + num(dim) + " dimensions";
  return "chance from this table's rows: median window " + num(n.centre) + ", spread " + num(n.spread) +
         ", correlation " + num(n.correlation) + " between a row's two windows";
}

// The default rule: evidence over two windows, tested against the table's own null.
void add_windowed_zombies(const EmbeddingRows& rows, const Thresholds& t, std::size_t max_ex, EmbeddingReport& rep) {
  EmbeddingStats& s = rep.stats;
  Ladder lon, sho;
  lon.window = t.zombie_window;
  sho.window = zombie_short_window(t.zombie_window);
  {
    std::vector<ZombieWindows> long_w, short_w;
    for (int64_t r = 0; r < rows.rows(); ++r) {
      if (const ZombieWindows w = rows.windows(r); w.completed >= 2) long_w.push_back(w);
      if (const ZombieWindows w = rows.short_windows(r); w.completed >= 2) short_w.push_back(w);
    }
    lon.null = estimate_zombie_null(long_w, rows.dim(), lon.window, t);
    sho.null = estimate_zombie_null(short_w, rows.dim(), sho.window, t);
  }
  std::vector<int64_t> flagged;
  std::vector<double> z, updates, stopped_steps;
  double cosine_sum = 0;
  for (int64_t r = 0; r < rows.rows(); ++r) {
    const ZombieWindows lw = rows.windows(r);
    const bool on_long = lw.completed >= 2;
    const ZombieWindows w = on_long ? lw : rows.short_windows(r);
    Ladder& l = on_long ? lon : sho;
    const ZombieVerdict v = judge_zombie_windows(w, l.window, l.null.threshold, t);
    if (v == ZombieVerdict::kNotJudged) {
      if (rows.updates(r) > 0) ++s.zombie_rows_unjudged;
      continue;
    }
    ++s.zombie_rows_judged;
    ++l.judged;
    if (!on_long) ++s.zombie_rows_judged_short;
    if (v == ZombieVerdict::kStopped) {
      ++s.zombie_rows_stopped;
      if (s.zombie_stopped_rows.size() < kMaxListedRows) s.zombie_stopped_rows.push_back(r);
      if (on_long) stopped_steps.push_back(static_cast<double>(w.last_step));
    }
    if (v != ZombieVerdict::kZombie) continue;
    ++s.zombie_rows;
    ++l.flagged;
    if (flagged.size() < kMaxListedRows) flagged.push_back(r);
    z.push_back(l.null.z_of(std::max(w.last_cosine, w.prior_cosine)));
    updates.push_back(rows.updates(r));
    cosine_sum += rows.mean_cosine(r);
  }
  if (!stopped_steps.empty()) s.zombie_stopped_step = static_cast<int64_t>(median_of(stopped_steps));
  s.zombie_mean_cosine = s.zombie_rows ? cosine_sum / s.zombie_rows : std::numeric_limits<double>::quiet_NaN();
  if (s.zombie_rows == 0) return;
  // Rows the null would flag: on each ladder, rows judged x P(both windows below the threshold).
  const double chance = static_cast<double>(lon.judged) * lon.null.both_below(lon.null.threshold) +
                        static_cast<double>(sho.judged) * sho.null.both_below(sho.null.threshold);
  EmbeddingDiagnostic d;
  d.type = kZombieRows;
  const std::string on_short =
      s.zombie_rows_judged_short
          ? " (" + num(sho.window) + " for the " + num(s.zombie_rows_judged_short) + " rows with fewer than " +
                num(2 * lon.window + 1) + " updates: below " + num(sho.null.threshold) + "; " +
                null_text(sho, rows.dim()) + ")"
          : std::string();
  d.premise = num(s.zombie_rows) + " of " + num(s.zombie_rows_judged) +
              " rows judged flip direction: in each of their last two windows of " + num(lon.window) +
              " updates the mean cosine between consecutive updates was below " + num(lon.null.threshold) + " (" +
              null_text(lon, rows.dim()) + "; effect: " + num(t.zombie_oscillation) + ")" + on_short +
              ", their updates did not shrink below " + num(t.zombie_damping) +
              "x, and they still reverse in their latest updates. Chance would flag " + num(chance) +
              " such rows. Over the whole run their mean consecutive cosine is " + num(s.zombie_mean_cosine) + "." +
              (s.zombie_rows_stopped
                   ? " " + num(s.zombie_rows_stopped) +
                         " more rows oscillated so, over at least their two last windows, but stopped since" +
                         (s.zombie_stopped_step >= 0
                              ? " (their last oscillating window ended at step " + num(s.zombie_stopped_step) +
                                    ", median)"
                              : std::string()) +
                         ": not flagged."
                   : std::string()) +
              (s.zombie_rows_unjudged ? " " + num(s.zombie_rows_unjudged) + " updated rows had fewer than " +
                                            num(2 * sho.window + 1) + " updates: not judged."
                                      : std::string());
  d.implies = kZombieImplies;
  d.action = kZombieAction;
  d.advice = kZombieAdvice;
  d.expected_effect = kZombieEffect;
  d.confidence = std::clamp(1.0 - chance / static_cast<double>(s.zombie_rows), 0.0, 1.0);
  d.evidence = {{"zombie_rows", double(s.zombie_rows)},
                {"rows_judged", double(s.zombie_rows_judged)},
                {"rows_judged_on_short_windows", double(s.zombie_rows_judged_short)},
                {"zombies_on_short_windows", double(sho.flagged)},
                {"rows_stopped", double(s.zombie_rows_stopped)},
                {"rows_not_judged", double(s.zombie_rows_unjudged)},
                {"window", double(lon.window)},
                {"short_window", double(sho.window)},
                {"cosine_threshold", lon.null.threshold},
                {"short_cosine_threshold", sho.null.threshold},
                {"null_rows", double(lon.null.rows)},
                {"null_estimated", lon.null.estimated ? 1.0 : 0.0},
                {"table_oscillates", lon.null.table_oscillates ? 1.0 : 0.0},
                {"null_centre", lon.null.centre},
                {"null_spread", lon.null.spread},
                {"null_correlation", lon.null.correlation},
                {"short_null_centre", sho.null.centre},
                {"short_null_spread", sho.null.spread},
                {"short_null_correlation", sho.null.correlation},
                {"zombie_z", t.zombie_z},
                {"zombie_damping", t.zombie_damping},
                {"median_z_of_flagged", median_of(z)},
                {"median_updates_of_flagged", median_of(updates)},
                {"whole_run_mean_cosine_of_flagged", s.zombie_mean_cosine},
                {"rows_chance_would_flag", chance},
                {"rows_listed", double(flagged.size())}};
  d.example_rows.assign(flagged.begin(), flagged.begin() + static_cast<std::ptrdiff_t>(std::min(max_ex, flagged.size())));
  d.rows = std::move(flagged);
  rep.diagnostics.push_back(std::move(d));
}

// GradTracer's rule, kept for comparison (EmbeddingRuleOptions::zombie_rule).
void add_gradtracer_zombies(const EmbeddingRows& rows, const Thresholds& t, std::size_t max_ex, EmbeddingReport& rep) {
  EmbeddingStats& s = rep.stats;
  std::vector<int64_t> zombies;
  int64_t strict = 0;
  double cosine_sum = 0;
  for (int64_t r = 0; r < rows.rows(); ++r) {
    if (rows.exposure(r) == 0) continue;
    ++s.zombie_rows_judged;
    if (!is_zombie(rows, r, s.median_velocity, t)) continue;
    ++s.zombie_rows;
    if (zombies.size() < kMaxListedRows) zombies.push_back(r);
    if (is_zombie(rows, r, s.median_velocity, t, kStricter)) ++strict;
    if (rows.cosines(r) > 0) cosine_sum += rows.mean_cosine(r);
  }
  s.zombie_mean_cosine = s.zombie_rows ? cosine_sum / s.zombie_rows : std::numeric_limits<double>::quiet_NaN();
  if (s.zombie_rows == 0) return;
  EmbeddingDiagnostic d;
  d.type = kZombieRows;
  d.premise = num(s.zombie_rows) + " of " + num(s.exposed_rows) +
              " exposed rows oscillate (GradTracer's rule): exposure > " + num(t.zombie_min_exposure) +
              ", oscillation EMA < " + num(t.zombie_oscillation) + ", velocity > " + num(t.zombie_velocity_ratio) +
              " x median velocity " + num(s.median_velocity) + ". Over the whole run their mean consecutive cosine is " +
              num(s.zombie_mean_cosine) + ".";
  d.implies = kZombieImplies;
  d.action = kZombieAction;
  d.advice = kZombieAdvice;
  d.expected_effect = kZombieEffect;
  d.confidence = static_cast<double>(strict) / s.zombie_rows;
  d.evidence = {{"zombie_rows", double(s.zombie_rows)}, {"exposed_rows", double(s.exposed_rows)},
                {"median_velocity", s.median_velocity},
                {"zombie_min_exposure", t.zombie_min_exposure},
                {"zombie_oscillation", t.zombie_oscillation},
                {"zombie_velocity_ratio", t.zombie_velocity_ratio},
                {"rows_passing_stricter_thresholds", double(strict)},
                {"whole_run_mean_cosine_of_flagged", s.zombie_mean_cosine},
                {"rows_listed", double(zombies.size())}};
  d.example_rows.assign(zombies.begin(), zombies.begin() + static_cast<std::ptrdiff_t>(std::min(max_ex, zombies.size())));
  d.rows = std::move(zombies);
  rep.diagnostics.push_back(std::move(d));
}

// NEGATIVE_SAMPLER_SKEW: the negatives drawn against the declared sampler.
void add_sampler_skew(const EmbeddingRows& rows, const EmbeddingRuleOptions& o, EmbeddingReport& rep) {
  const SamplerSkew k = negative_sampler_skew(rows, o.negative_sampler);
  rep.stats.sampler_tv = k.tv;
  rep.stats.sampler_tv_chance = k.tv_chance;
  if (!(k.tv - k.tv_chance > o.sampler_skew)) return;
  const bool uniform = o.negative_sampler.kind == NegativeSampler::Kind::kUniform;
  const std::string declared =
      uniform ? "uniform over rows" : "popularity^" + num(o.negative_sampler.exponent) + " (non-negative lookups)";
  EmbeddingDiagnostic d;
  d.type = kNegativeSamplerSkew;
  d.premise = "The " + num(k.negatives) + " negatives drawn are distributed unlike the declared sampler (" + declared +
              "): total-variation distance " + num(k.tv) + ", where a correct sampler with as many draws reaches " +
              num(k.tv_chance) + " by chance; threshold " + num(o.sampler_skew) + " beyond chance.";
  d.implies = "The model learns to rank against the wrong negatives: rows the sampler favours are pushed down, the "
              "rest are never contrasted.";
  d.action = "CHECK_NEGATIVE_SAMPLER";
  d.advice = "Check the negative sampler against the one declared (EmbeddingRuleOptions::negative_sampler); the rows "
             "listed are drawn far more often than it would.";
  d.expected_effect = "Negatives spread as the sampler intends; ranking metrics no longer reward popularity alone.";
  const double excess = k.tv - k.tv_chance;
  d.confidence = ramp(excess, o.sampler_skew, o.sampler_skew * kStricter);
  d.evidence = {{"negatives", double(k.negatives)},
                {"total_variation", k.tv},
                {"total_variation_chance", k.tv_chance},
                {"threshold_beyond_chance", o.sampler_skew},
                {"sampler_exponent", uniform ? 0.0 : o.negative_sampler.exponent}};
  d.example_rows = k.most_over;
  rep.diagnostics.push_back(std::move(d));
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

  std::vector<double> exposure, lookups;
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
    lookups.push_back(rows.lookups(r));
    s.lookups += rows.lookups(r);
    s.negative_lookups += rows.negatives(r);
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
  s.lookup_gini = gini(lookups);
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

  if (o.zombie_rule == ZombieRule::kWindowed) {
    add_windowed_zombies(rows, t, max_ex, rep);
  } else {
    add_gradtracer_zombies(rows, t, max_ex, rep);
  }

  // DEAD_ROWS: never exposed, or exposed but never really updated (exact counts).
  const int64_t dead = s.never_exposed_rows + s.never_updated_rows;
  if (rows.rows() > 0 && static_cast<double>(dead) / rows.rows() > o.dead_rows_frac) {
    EmbeddingDiagnostic d;
    d.type = kDeadRows;
    d.premise = num(s.never_exposed_rows) + " of " + num(s.num_embeddings) +
                " rows were never in a batch and " + num(s.never_updated_rows) +
                " were exposed but never moved by more than " +
                num(t.update_ratio_lo) + " x their norm in " + num(tracked_steps) + " steps.";
    d.implies = "Dead rows keep their initial values: cold-start items, broken sampling, or "
                "a zero learning rate for them.";
    d.action = "CHECK_NEGATIVE_SAMPLING_OR_SHARE_COLD_START_EMBEDDINGS";
    d.advice = "Check that the sampler can draw every row, and give rows without data a shared cold-start "
               "embedding.";
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

  // POPULARITY_BIAS: Gini of per-lookup counts (a row in every batch counts each time, so a
  // sampler that repeats popular rows shows); stricter threshold 25% closer to 1.
  if (s.lookup_gini > o.popularity_gini) {
    EmbeddingDiagnostic d;
    d.type = kPopularityBias;
    d.premise = "Lookups are concentrated: Gini " + num(s.lookup_gini) + " > " + num(o.popularity_gini) +
                " over the lookups of " + num(s.exposed_rows) + " exposed rows (per step: Gini " +
                num(s.popularity_gini) + ", normalised entropy " + num(s.exposure_entropy) + ").";
    d.implies = "Training optimises mostly popular rows; long-tail rows learn little.";
    d.action = "APPLY_LOG_Q_CORRECTION_OR_INVERSE_FREQUENCY_SAMPLING";
    d.advice = "Correct for popularity: subtract log q (the sampling probability) from the logits, or sample "
               "rows inversely to their frequency.";
    d.expected_effect = "More balanced exposure and better long-tail coverage.";
    d.confidence = ramp(s.lookup_gini, o.popularity_gini,
                        o.popularity_gini + (1.0 - o.popularity_gini) * (kStricter - 1.0));
    d.evidence = {{"lookup_gini", s.lookup_gini},
                  {"threshold", o.popularity_gini},
                  {"popularity_gini_per_step", s.popularity_gini},
                  {"exposure_entropy", s.exposure_entropy},
                  {"exposed_rows", double(s.exposed_rows)}};
    rep.diagnostics.push_back(std::move(d));
  }

  add_sampler_skew(rows, o, rep);

  // REPRESENTATION_COLLAPSE: effective rank (Roy & Vetterli 2007) of sampled rows.
  if (s.effective_rank >= 0 && sampled_rows > 0) {
    const double full = static_cast<double>(std::min<int64_t>(rows.dim(), sampled_rows));
    const double ratio = s.effective_rank / full;
    if (ratio < o.collapse_ratio) {
      EmbeddingDiagnostic d;
      d.type = kRepresentationCollapse;
      d.premise = "Effective rank " + num(s.effective_rank) + " of " + num(full) +
                  " possible (ratio " + num(ratio) + " < " + num(o.collapse_ratio) + ") over " +
                  num(sampled_rows) + " sampled rows.";
      d.implies = "Rows occupy a low-dimensional subspace: the table encodes few distinct "
                  "directions.";
      d.action = "ADD_UNIFORMITY_REGULARISER_OR_LOWER_LR";
      d.advice = "Add a uniformity regulariser to spread the rows apart, or lower the learning rate.";
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
