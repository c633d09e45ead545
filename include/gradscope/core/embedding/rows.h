// EmbeddingRows: per-row training dynamics of one embedding table, one record per row.
//
//   gradscope::EmbeddingRows rows(num_embeddings, dim);     // zeroed state
//   rows.expose(row, step);                                 // the row was in this batch
//   rows.count_lookups(row, 3, 1);                          // 3 lookups, 1 as a negative
//   rows.record_gradient(row, grad_ptr);                    // its gradient (dim floats)
//   rows.record_update(row, delta_ptr, row_norm_before);    // after - before the optimizer
//   double snr = rows.snr(row);                             // NaN until two gradients
//   ZombieWindows w = rows.windows(row);                    // consecutive-update cosines
//   ZombieWindows s = rows.short_windows(row);              // the same over K/8 cosines
//
// Standard library only: the LibTorch tracker (gradscope/torch/embedding/tracker.h) gathers the
// touched rows and feeds them here, so every update is O(dim) and never touches other rows.
// A row's record: 112 bytes of counters and running sums, its gradient mean (4 x dim, float32)
// and its previous update (2 x dim, bfloat16), padded to whole 64-byte cache lines. dim 64:
// 512 bytes; 10M rows: 5.1 GB. Row indices outside [0, rows) throw Error.
#pragma once

#include <cstdint>
#include <vector>

namespace gradscope {

/// EMA rates and the "really updated" threshold.
struct EmbeddingRowsOptions {
  double velocity_ema = 0.9;     ///< v <- r v + (1 - r) ||delta|| (GradTracer)
  double oscillation_ema = 0.8;  ///< o <- r o + (1 - r) cos(delta_t, delta_t-1) (GradTracer)
  double gradient_ema = 0.9;     ///< exponentially weighted mean/variance of the gradient
  double update_ratio_lo = 1e-6; ///< really updated: ||delta|| > this x ||row|| (Thresholds)
  int zombie_window = 16;         ///< cosines per window of the zombie statistic (Thresholds)
};

/// Cosines per short window: zombie_window / 8, at least 1. Rows with too few updates for two
/// windows of zombie_window are judged on two short windows (a 1M-row table's rows are mostly
/// rare: 16-cosine windows left most of them unjudged).
constexpr int zombie_short_window(int zombie_window) { return zombie_window / 8 > 1 ? zombie_window / 8 : 1; }

/// A row's last two complete windows of zombie_window cosines between consecutive real
/// updates: their mean cosine and mean update norm. Windows follow one another without
/// overlap, so each window's mean is over cosines of its own updates.
struct ZombieWindows {
  int completed = 0;        ///< windows completed so far, at most 2 counted
  double last_cosine = 0;   ///< mean cosine of the last complete window
  double last_norm = 0;     ///< mean ||delta|| of the same updates
  double prior_cosine = 0;  ///< the window before it
  double prior_norm = 0;
  int current_updates = 0;  ///< cosines in the window being filled (fewer than zombie_window)
  double current_cosine = 0;  ///< their mean (NaN when there are none)
  int32_t last_step = -1;   ///< the step of the update that completed the last window (-1: none)
};

/// Per-row state of one table. Rows are identified by their index in [0, rows).
class EmbeddingRows {
 public:
  /// Zeroed state for `rows` x `dim`. Throws Error for negative sizes or bad EMA rates.
  EmbeddingRows(int64_t rows, int64_t dim, EmbeddingRowsOptions options = {});

  /// Bytes of state per row for a table of width `dim`: 112 + 6 x dim rounded up to 64.
  static constexpr int64_t bytes_per_row(int64_t dim) { return (112 + 6 * dim + 63) / 64 * 64; }

  int64_t rows() const { return rows_; }
  int64_t dim() const { return dim_; }
  const EmbeddingRowsOptions& options() const { return options_; }

  /// Counts one exposure of `row` at `step` (once per step, however often the batch holds it).
  void expose(int64_t row, int64_t step);
  /// Counts `lookups` occurrences of `row` in a batch, `negatives` of them drawn as sampled
  /// negatives (every occurrence counts: per-lookup exposure). Saturates at 2^32 - 1.
  void count_lookups(int64_t row, uint32_t lookups, uint32_t negatives);
  /// Folds one gradient (dim floats) into the row's exponentially weighted mean and
  /// variance (Finch 2009, "Incremental calculation of weighted mean and variance", eq. 143).
  void record_gradient(int64_t row, const float* gradient);
  /// Folds the real update of the row (after - before the optimizer step, dim floats) into
  /// velocity and oscillation; `row_norm` is ||row|| before the step.
  void record_update(int64_t row, const float* delta, double row_norm);

  /// record_gradient for n rows (gradients: n x dim, row-major); returns sum ||g||^2.
  /// Prefetches the state of rows further on, which matters once the table outgrows caches.
  double record_gradients(const int64_t* rows, int64_t n, const float* gradients);
  /// record_update for n rows (deltas and rows before the step: n x dim each).
  void record_updates(const int64_t* rows, int64_t n, const float* deltas, const float* before);

  /// Gradient signal-to-noise ratio ||m||^2 / v (m, v: weighted mean and total variance of
  /// the row's gradient). NaN with fewer than two gradients; +Inf for zero variance.
  double snr(int64_t row) const;

  uint32_t exposure(int64_t row) const { return scalars(row).exposure; }
  /// Last step the row was exposed, -1 when never.
  int32_t last_seen(int64_t row) const { return scalars(row).last_seen; }
  float velocity(int64_t row) const { return scalars(row).velocity; }
  float oscillation(int64_t row) const { return scalars(row).oscillation; }
  /// Steps in which the row really changed (see update_ratio_lo).
  uint32_t updates(int64_t row) const { return scalars(row).updates; }
  uint32_t gradients(int64_t row) const { return scalars(row).gradients; }
  /// Occurrences in batches (all roles), and those drawn as negatives.
  uint32_t lookups(int64_t row) const { return scalars(row).lookups; }
  uint32_t negatives(int64_t row) const { return scalars(row).negatives; }
  /// Cosines between consecutive real updates so far, and their mean (NaN when none).
  uint32_t cosines(int64_t row) const { return scalars(row).cosines; }
  double mean_cosine(int64_t row) const;
  ZombieWindows windows(int64_t row) const;
  /// The same over windows of zombie_short_window(zombie_window) cosines (last_step not kept).
  ZombieWindows short_windows(int64_t row) const;

  /// The parts of a row's record one pass reads: kGradient (counters and gradient mean, for
  /// expose, count_lookups, record_gradient) or kUpdate (counters and previous update).
  enum class Part { kGradient, kUpdate };
  /// Asks the CPU to start loading `part` of the row's record (no effect on the state):
  /// a loop over scattered rows calls it a few rows ahead.
  void prefetch(int64_t row, Part part) const;

 private:
  // Consecutive windows of a fixed number of cosines: sums over the window being filled, and
  // the means of the last two complete ones.
  struct Windows {
    float cosine = 0, norm = 0;  // sums over the window being filled
    float last_cosine = 0, last_norm = 0, prior_cosine = 0, prior_norm = 0;  // window means
    uint16_t n = 0, completed = 0;  // cosines in the window being filled; complete ones, <= 2

    // Adds a cosine and its update's norm; true when that completes a window.
    bool add(double cosine, double norm, int size);
    ZombieWindows view(int32_t last_step) const;
  };
  struct Scalars {
    double cosine_sum = 0;           // over the whole run (a float would drift past ~1e5 terms)
    uint32_t exposure = 0;
    int32_t last_seen = -1;
    float velocity = 0, oscillation = 0;
    uint32_t updates = 0, gradients = 0;
    float grad_var = 0;
    uint32_t lookups = 0, negatives = 0;
    uint32_t cosines = 0;
    Windows windows;                // of zombie_window cosines
    int32_t last_window_step = -1;  // last_seen when the last of them completed
    Windows short_windows;          // of zombie_short_window(zombie_window) cosines
  };
  // One record per row (Scalars, gradient mean, previous update), so that a touched row on a
  // table larger than the caches costs one page and its TLB entry, not three; records start
  // on cache lines, so a pass reads only the lines of its part.
  struct alignas(64) Line {
    unsigned char bytes[64];
  };

  void check_row(int64_t row) const {
    if (static_cast<uint64_t>(row) >= static_cast<uint64_t>(rows_)) out_of_range(row);
  }
  [[noreturn]] void out_of_range(int64_t row) const;
  const unsigned char* record(int64_t row) const {
    return reinterpret_cast<const unsigned char*>(lines_.data()) + row * stride_;
  }
  unsigned char* record(int64_t row) {
    return reinterpret_cast<unsigned char*>(lines_.data()) + row * stride_;
  }
  const Scalars& scalars(int64_t row) const {
    check_row(row);
    return *reinterpret_cast<const Scalars*>(record(row));
  }
  Scalars& scalars(int64_t row) {
    check_row(row);
    return *reinterpret_cast<Scalars*>(record(row));
  }
  float* grad_mean(int64_t row) { return reinterpret_cast<float*>(record(row) + kMeanOffset); }
  const float* grad_mean(int64_t row) const {
    return reinterpret_cast<const float*>(record(row) + kMeanOffset);
  }
  uint16_t* prev_update(int64_t row) {
    return reinterpret_cast<uint16_t*>(record(row) + kMeanOffset + 4 * dim_);
  }

  static constexpr int64_t kMeanOffset = 112;  // sizeof(Scalars)
  int64_t rows_, dim_, stride_;
  EmbeddingRowsOptions options_;
  std::vector<Line> lines_;
};

/// sum x_i^2 over n floats (eight float lanes, summed in double; rows are short).
double squared_norm(const float* x, int64_t n);

/// Auto-fix factor for a zombie row from its gradient SNR: the Wiener / minimum-mean-square
/// gain snr / (1 + snr) of a noisy estimate g = mu + noise, clamped to [lo, hi]. NaN snr -> hi.
double zombie_scale(double snr, double lo, double hi);
/// Boost for an exposed but under-trained row: 1 + (max_boost - 1) x snr / (1 + snr), so only
/// rows whose gradients agree across steps get a larger step. NaN snr -> 1.
double undertrained_boost(double snr, double max_boost);

}  // namespace gradscope
