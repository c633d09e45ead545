// EmbeddingReport: what the embedding rules concluded about one table, with the evidence.
//
//   gradscope::EmbeddingRuleOptions opt;                  // zombie thresholds from Thresholds
//   gradscope::EmbeddingReport r = gradscope::diagnose_embedding("item_emb", rows, steps, opt);
//   for (const auto& d : r.diagnostics) std::cout << d.type << ": " << d.premise << "\n";
//   std::cout << gradscope::render_embedding_json(r);     // gradscope/io/embedding/json.h
//
// Pure functions of EmbeddingRows (no LibTorch). Confidence (docs/embedding.md has each
// formula): ZOMBIE_ROWS (windowed rule), 1 - (rows chance would flag) / (rows flagged), where
// chance is the table's own null (zombie_null.h); for a single number (POPULARITY_BIAS,
// NEGATIVE_SAMPLER_SKEW, REPRESENTATION_COLLAPSE), 1 when it passes a threshold made 25%
// stricter, otherwise the fraction of the way from the threshold to the stricter one; for
// GradTracer's zombie rule, the share of flagged rows that pass its thresholds made 25%
// stricter. Counts of never-exposed / never-updated rows are exact, so their confidence is 1.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/embedding/rows.h"
#include "gradscope/core/vocabulary/thresholds.h"

namespace gradscope {

/// Which test decides that a row is a zombie.
enum class ZombieRule {
  kWindowed,    ///< oscillation significant and lasting over two windows (Thresholds::zombie_*)
  kGradTracer,  ///< GradTracer's: the oscillation EMA at the last update, exposure, velocity
};

/// The negative sampler a training run declares, against which NEGATIVE_SAMPLER_SKEW measures
/// the negatives it actually drew.
struct NegativeSampler {
  enum class Kind {
    kUniform,     ///< every row equally likely
    kPopularity,  ///< rows in proportion to (their non-negative lookups)^exponent
  };
  Kind kind = Kind::kUniform;
  double exponent = 0.75;  ///< word2vec's unigram^0.75 (Mikolov et al. 2013)
};

/// Thresholds of the embedding rules; zombie ones and EMA rates come from `thresholds`.
struct EmbeddingRuleOptions {
  Thresholds thresholds;
  ZombieRule zombie_rule = ZombieRule::kWindowed;
  /// POPULARITY_BIAS when the Gini of per-lookup counts (exposed rows) > this (GradTracer: 0.8).
  double popularity_gini = 0.8;
  /// The sampler the negatives should follow (see EmbeddingTracker's Role::kNegative).
  NegativeSampler negative_sampler;
  /// NEGATIVE_SAMPLER_SKEW when the total-variation distance between the negatives drawn and
  /// the declared sampler exceeds what a correct sampler with as many draws reaches by chance
  /// by more than this: a quarter of the negatives drawn where the sampler would not put them.
  double sampler_skew = 0.25;
  /// REPRESENTATION_COLLAPSE when effective rank / min(dim, sampled rows) < this.
  double collapse_ratio = 0.1;
  /// DEAD_ROWS when the fraction of never-exposed or never-updated rows > this.
  double dead_rows_frac = 0.0;
  /// Example row ids listed per diagnostic.
  int max_examples = 10;
};

/// Table-level numbers, all measured.
struct EmbeddingStats {
  int64_t num_embeddings = 0;
  int64_t dim = 0;
  int64_t tracked_steps = 0;
  int64_t exposed_rows = 0;
  double active_coverage_pct = 0;  ///< exposed rows / rows x 100
  double popularity_gini = 0;      ///< over per-step exposure counts of exposed rows (NaN: none)
  double lookup_gini = 0;          ///< over per-lookup counts of exposed rows (NaN: none)
  int64_t lookups = 0;             ///< every occurrence in a tracked batch, all roles
  int64_t negative_lookups = 0;    ///< of them, marked as sampled negatives
  double exposure_entropy = 0;     ///< normalised by log(exposed rows) (NaN: fewer than 2)
  int64_t never_exposed_rows = 0;
  int64_t never_updated_rows = 0;  ///< exposed, but never really changed by the optimizer
  int64_t zombie_rows = 0;
  int64_t zombie_rows_judged = 0;  ///< rows with the updates the zombie rule needs
  /// Rows that oscillated over two complete windows but stopped since (stopped_zombie): not
  /// flagged.
  int64_t zombie_rows_stopped = 0;
  /// Of the rows judged, those with too few updates for two windows of zombie_window, judged on
  /// two short windows (zombie_short_window(zombie_window) cosines each).
  int64_t zombie_rows_judged_short = 0;
  /// Rows with real updates, but fewer than the 2 x zombie_short_window + 1 the rule needs: not
  /// judged.
  int64_t zombie_rows_unjudged = 0;
  /// The stopped rows (zombie_rows_stopped), ascending, at most kMaxListedRows.
  std::vector<int64_t> zombie_stopped_rows;
  /// Median step at which the stopped rows' last oscillating window (of zombie_window) ended;
  /// -1 when none stopped on such windows.
  int64_t zombie_stopped_step = -1;
  double zombie_mean_cosine = 0;   ///< whole-run mean consecutive-update cosine of zombie rows (NaN: none)
  double sampler_tv = 0;           ///< TV distance of negatives from the declared sampler (NaN: not judged)
  double sampler_tv_chance = 0;    ///< its expectation for a correct sampler with as many draws
  double median_velocity = 0;      ///< over exposed rows
  double saliency_median = 0;      ///< velocity / (exposure + 1), over exposed rows
  double effective_rank = -1;      ///< of sampled rows; -1 when not measured
  int64_t effective_rank_rows = 0; ///< rows in the sample
  int64_t state_bytes = 0;         ///< bytes of per-row state
  std::vector<int64_t> lowest_saliency_rows;  ///< pruning candidates, lowest first
};

/// One finding: GradTracer's agent fields plus measured evidence.
struct EmbeddingDiagnostic {
  /// ZOMBIE_ROWS, DEAD_ROWS, POPULARITY_BIAS, NEGATIVE_SAMPLER_SKEW, REPRESENTATION_COLLAPSE
  std::string type;
  /// `action` is a code for programs (LOWER_EMBEDDING_LR_OR_ENABLE_AUTO_FIX); `advice` says
  /// the same to a person.
  std::string premise, implies, action, advice, expected_effect;
  double confidence = 0;
  std::vector<std::pair<std::string, double>> evidence;  ///< named numbers, thresholds too
  std::vector<int64_t> example_rows;
  /// Every row the finding is about, ascending (ZOMBIE_ROWS: every flagged row), at most
  /// kMaxListedRows; empty for findings that list examples only.
  std::vector<int64_t> rows;
};

/// The most rows a report lists by id (ZOMBIE_ROWS' rows, the stopped rows): 100,000 ids take
/// about 0.7 MB of a saved summary.
constexpr std::size_t kMaxListedRows = 100000;

/// The report of one table.
struct EmbeddingReport {
  std::string layer;
  EmbeddingStats stats;
  std::vector<EmbeddingDiagnostic> diagnostics;
};

/// GradTracer's zombie rule for one row against the median velocity of exposed rows.
bool is_zombie(const EmbeddingRows& rows, int64_t row, double median_velocity,
               const Thresholds& t, double strictness = 1.0);

/// The mean window cosine below which the windowed rule calls a window oscillating:
/// min(zombie_oscillation, -zombie_z / sqrt(dim x zombie_window)).
double zombie_cosine_threshold(const Thresholds& t, int64_t dim);

/// The windowed zombie rule for one row (Thresholds::zombie_window): two complete windows,
/// both below zombie_cosine_threshold, the last one's updates not shrunk below
/// zombie_damping x the one before, and still reversing now: the updates since (when half a
/// window or more) have a negative mean consecutive cosine.
bool is_windowed_zombie(const EmbeddingRows& rows, int64_t row, const Thresholds& t);

/// A row whose two complete windows oscillated but whose updates since (half a window or more)
/// no longer point back on average: it stopped, and is not a zombie now.
bool stopped_zombie(const EmbeddingRows& rows, int64_t row, const Thresholds& t);

/// What the windowed rule says of a row's windows of `window` cosines with the window threshold
/// `below` (is_windowed_zombie uses zombie_cosine_threshold; the report the table's null).
enum class ZombieVerdict { kNotJudged, kHealthy, kZombie, kStopped };
ZombieVerdict judge_zombie_windows(const ZombieWindows& w, int window, double below, const Thresholds& t);

/// The windowed rule's z-score of a row: the weaker of its two windows' -mean x sqrt(dim x
/// window), the number of standard deviations past chance (NaN before two windows).
double zombie_z_score(const EmbeddingRows& rows, int64_t row, const Thresholds& t);

/// How far the negatives drawn are from the declared sampler.
struct SamplerSkew {
  int64_t negatives = 0;  ///< negative lookups counted
  double tv = std::numeric_limits<double>::quiet_NaN();  ///< total-variation distance
  /// E[tv] for a correct sampler with as many draws: sum over rows of E|X_i - N p_i| / (2 N),
  /// X_i ~ Binomial(N, p_i) (binomial_mean_absolute_deviation).
  double tv_chance = std::numeric_limits<double>::quiet_NaN();
  std::string not_judged;  ///< why tv is NaN ("no negatives marked", ...), empty when judged
  std::vector<int64_t> most_over;  ///< rows drawn most above expectation, most first (up to 10)
};

/// Measures the negatives of `rows` against `sampler`. O(rows).
SamplerSkew negative_sampler_skew(const EmbeddingRows& rows, const NegativeSampler& sampler);

/// Median velocity over exposed rows (0 when none). O(rows).
double median_exposed_velocity(const EmbeddingRows& rows);

/// Judges a table. `singular_values` of sampled rows (empty: effective rank not measured).
EmbeddingReport diagnose_embedding(const std::string& layer, const EmbeddingRows& rows,
                                   int64_t tracked_steps, const EmbeddingRuleOptions& options,
                                   const std::vector<double>& singular_values = {},
                                   int64_t sampled_rows = 0);

}  // namespace gradscope

namespace gradscope {

/// One auto-fix act on one table at one step (appended to audit.jsonl by gradscope::AuditLog).
struct EmbeddingIntervention {
  double time = 0;          ///< seconds since the Unix epoch
  int64_t step = 0;
  std::string layer;
  std::string type;         ///< ZOMBIE_GRADIENT_SCALE or UNDERTRAINED_GRADIENT_BOOST
  int64_t rows_affected = 0;
  double scale_min = 0, scale_mean = 0, scale_max = 0;
  double snr_median = 0;    ///< median gradient SNR of the affected rows
  std::vector<int64_t> sample_rows;  ///< up to 16 affected row ids, ascending
};

/// Correlation over steps between two tables' gradient norms (e.g. user and item towers).
struct TowerCorrelation {
  std::string a, b;
  double pearson = 0;  ///< NaN when fewer than 2 common steps or a constant series
  int64_t steps = 0;   ///< steps where both norms were measured
};

/// Reports of several tables tracked together.
struct EmbeddingHubReport {
  std::vector<EmbeddingReport> tables;
  std::vector<TowerCorrelation> correlations;  ///< every pair, in tracking order
};

}  // namespace gradscope
