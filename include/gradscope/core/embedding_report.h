// EmbeddingReport: what the embedding rules concluded about one table, with the evidence.
//
//   gradscope::EmbeddingRuleOptions opt;                  // zombie thresholds from Thresholds
//   gradscope::EmbeddingReport r = gradscope::diagnose_embedding("item_emb", rows, steps, opt);
//   for (const auto& d : r.diagnostics) std::cout << d.type << ": " << d.premise << "\n";
//   std::cout << gradscope::render_embedding_json(r);     // gradscope/io/embedding_json.h
//
// Pure functions of EmbeddingRows (no LibTorch). Confidence, for every diagnostic: the share
// of its evidence that survives thresholds made 25% stricter (rows for row diagnostics; for a
// single number, 1 when it passes the stricter threshold, otherwise the fraction of the way
// from the threshold to the stricter one). Counts of never-exposed / never-updated rows are
// exact, so their confidence is 1.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/embedding_rows.h"
#include "gradscope/core/thresholds.h"

namespace gradscope {

/// Thresholds of the embedding rules; zombie ones and EMA rates come from `thresholds`.
struct EmbeddingRuleOptions {
  Thresholds thresholds;
  /// POPULARITY_BIAS when the Gini of exposure counts (exposed rows) > this (GradTracer: 0.8).
  double popularity_gini = 0.8;
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
  double popularity_gini = 0;      ///< over exposure counts of exposed rows (NaN: none)
  double exposure_entropy = 0;     ///< normalised by log(exposed rows) (NaN: fewer than 2)
  int64_t never_exposed_rows = 0;
  int64_t never_updated_rows = 0;  ///< exposed, but never really changed by the optimizer
  int64_t zombie_rows = 0;
  double median_velocity = 0;      ///< over exposed rows
  double saliency_median = 0;      ///< velocity / (exposure + 1), over exposed rows
  double effective_rank = -1;      ///< of sampled rows; -1 when not measured
  int64_t effective_rank_rows = 0; ///< rows in the sample
  int64_t state_bytes = 0;         ///< bytes of per-row state
  std::vector<int64_t> lowest_saliency_rows;  ///< pruning candidates, lowest first
};

/// One finding: GradTracer's agent fields plus measured evidence.
struct EmbeddingDiagnostic {
  std::string type;  ///< ZOMBIE_ROWS, DEAD_ROWS, POPULARITY_BIAS, REPRESENTATION_COLLAPSE
  std::string premise, implies, action, expected_effect;
  double confidence = 0;
  std::vector<std::pair<std::string, double>> evidence;  ///< named numbers, thresholds too
  std::vector<int64_t> example_rows;
};

/// The report of one table.
struct EmbeddingReport {
  std::string layer;
  EmbeddingStats stats;
  std::vector<EmbeddingDiagnostic> diagnostics;
};

/// GradTracer's zombie rule for one row against the median velocity of exposed rows.
bool is_zombie(const EmbeddingRows& rows, int64_t row, double median_velocity,
               const Thresholds& t, double strictness = 1.0);

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
