#include "gradscope/core/embedding/rows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <new>
#include <string>

#include "gradscope/core/error.h"
#include "gradscope/core/stats/half.h"

namespace gradscope {
namespace {
// Rows are short (dim ~ 16-256): eight float lanes the compiler vectorises, summed in double.
constexpr int kLanes = 8;

double dot_lanes(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += a[j + l] * b[j + l];
  double sum = 0.0;
  for (int l = 0; l < kLanes; ++l) sum += acc[l];
  for (; j < n; ++j) sum += static_cast<double>(a[j]) * b[j];
  return sum;
}

void check_rate(double r, const char* name) {
  if (!(r >= 0.0 && r < 1.0))
    throw Error(std::string("embedding rows: ") + name + " must be in [0, 1)");
}
}  // namespace

EmbeddingRows::EmbeddingRows(int64_t rows, int64_t dim, EmbeddingRowsOptions options)
    : rows_(rows), dim_(dim), stride_(0), options_(options) {
  if (rows < 0 || dim <= 0) throw Error("embedding rows: need rows >= 0 and dim > 0");
  check_rate(options.velocity_ema, "velocity_ema");
  check_rate(options.oscillation_ema, "oscillation_ema");
  check_rate(options.gradient_ema, "gradient_ema");
  if (options.zombie_window < 1 || options.zombie_window > 65535)
    throw Error("embedding rows: zombie_window must be in [1, 65535]");
  static_assert(sizeof(Scalars) == kMeanOffset, "bytes_per_row counts 112 bytes of scalars");
  static_assert(alignof(Scalars) <= alignof(Line), "records start on a line");
  stride_ = bytes_per_row(dim);
  // Every line is written here (zeroes, then each row's scalars), so the pages of a large
  // table are faulted in now rather than one per first-touched row during training.
  lines_.resize(static_cast<std::size_t>(rows * (stride_ / 64)));
  for (int64_t r = 0; r < rows; ++r) new (record(r)) Scalars{};
}

void EmbeddingRows::out_of_range(int64_t row) const {
  throw Error("embedding rows: row " + std::to_string(row) + " out of range [0, " +
              std::to_string(rows_) + ")");
}

void EmbeddingRows::expose(int64_t row, int64_t step) {
  if (step > std::numeric_limits<int32_t>::max())
    throw Error("embedding rows: step " + std::to_string(step) + " exceeds 2^31 - 1");
  Scalars& x = scalars(row);
  if (x.last_seen == static_cast<int32_t>(step) && x.exposure > 0) return;
  ++x.exposure;
  x.last_seen = static_cast<int32_t>(step);
}

void EmbeddingRows::count_lookups(int64_t row, uint32_t lookups, uint32_t negatives) {
  constexpr uint32_t kMax = std::numeric_limits<uint32_t>::max();
  Scalars& x = scalars(row);
  x.lookups = x.lookups > kMax - lookups ? kMax : x.lookups + lookups;
  x.negatives = x.negatives > kMax - negatives ? kMax : x.negatives + negatives;
}

double EmbeddingRows::mean_cosine(int64_t row) const {
  const Scalars& x = scalars(row);
  return x.cosines ? x.cosine_sum / x.cosines : std::numeric_limits<double>::quiet_NaN();
}

bool EmbeddingRows::Windows::add(double c, double d, int size) {
  cosine += static_cast<float>(c);
  norm += static_cast<float>(d);
  if (++n < size) return false;
  prior_cosine = last_cosine;  // a window complete: shift it in
  prior_norm = last_norm;
  last_cosine = cosine / n;
  last_norm = norm / n;
  cosine = norm = 0;
  n = 0;
  if (completed < 2) ++completed;
  return true;
}

ZombieWindows EmbeddingRows::Windows::view(int32_t last_step) const {
  return {completed, last_cosine, last_norm, prior_cosine, prior_norm, n,
          n ? cosine / n : std::numeric_limits<double>::quiet_NaN(), last_step};
}

ZombieWindows EmbeddingRows::windows(int64_t row) const {
  const Scalars& x = scalars(row);
  return x.windows.view(x.last_window_step);
}

ZombieWindows EmbeddingRows::short_windows(int64_t row) const { return scalars(row).short_windows.view(-1); }

void EmbeddingRows::record_gradient(int64_t row, const float* __restrict g) {
  Scalars& x = scalars(row);
  float* __restrict m = grad_mean(row);
  if (x.gradients++ == 0) {
    std::copy(g, g + dim_, m);
    x.grad_var = 0.f;
    return;
  }
  // Finch (2009) eq. 143: diff = x - mu; incr = a diff; mu += incr; S = (1 - a)(S + diff.incr)
  const float a = static_cast<float>(1.0 - options_.gradient_ema);
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= dim_; j += kLanes)
    for (int l = 0; l < kLanes; ++l) {
      const float diff = g[j + l] - m[j + l];
      m[j + l] += a * diff;
      acc[l] += diff * diff;
    }
  double diff_diff = 0.0;
  for (int l = 0; l < kLanes; ++l) diff_diff += acc[l];
  for (; j < dim_; ++j) {
    const float diff = g[j] - m[j];
    m[j] += a * diff;
    diff_diff += static_cast<double>(diff) * diff;
  }
  x.grad_var = static_cast<float>((1.0 - a) * (x.grad_var + a * diff_diff));
}

void EmbeddingRows::record_update(int64_t row, const float* delta, double row_norm) {
  const double norm = std::sqrt(dot_lanes(delta, delta, dim_));
  Scalars& x = scalars(row);
  const double rv = options_.velocity_ema;
  x.velocity = static_cast<float>(rv * x.velocity + (1.0 - rv) * norm);
  if (!(norm > options_.update_ratio_lo * row_norm) || norm == 0.0) return;
  uint16_t* prev = prev_update(row);
  if (x.updates > 0) {
    float p[512];  // the previous update, widened in blocks
    double dot = 0.0, pp = 0.0;
    for (int64_t b = 0; b < dim_; b += 512) {
      const int64_t n = std::min<int64_t>(512, dim_ - b);
      for (int64_t j = 0; j < n; ++j) p[j] = bfloat16_to_float(prev[b + j]);
      dot += dot_lanes(p, delta + b, n);
      pp += dot_lanes(p, p, n);
    }
    if (pp > 0.0) {
      const double cosine = dot / (std::sqrt(pp) * norm);
      const double ro = options_.oscillation_ema;
      x.oscillation = static_cast<float>(ro * x.oscillation + (1.0 - ro) * cosine);
      if (x.cosines < std::numeric_limits<uint32_t>::max()) {
        x.cosine_sum += cosine;
        ++x.cosines;
      }
      if (x.windows.add(cosine, norm, options_.zombie_window)) x.last_window_step = x.last_seen;
      x.short_windows.add(cosine, norm, zombie_short_window(options_.zombie_window));
    }
  }
  for (int64_t j = 0; j < dim_; ++j) prev[j] = float_to_bfloat16(delta[j]);
  ++x.updates;
}

double squared_norm(const float* x, int64_t n) { return dot_lanes(x, x, n); }

// Touched rows are scattered over a table that can be far larger than the caches: prefetch
// the record of the row kAhead positions on while this one is processed.
constexpr int64_t kAhead = 4;

void EmbeddingRows::prefetch(int64_t row, Part part) const {
  if (static_cast<uint64_t>(row) >= static_cast<uint64_t>(rows_)) return;
  const unsigned char* r = record(row);
  const int64_t mean_end = kMeanOffset + 4 * dim_;
  // kGradient: the scalars and the gradient mean, which follows them; kUpdate: the scalars
  // and the previous update.
  const int64_t end = part == Part::kGradient ? mean_end : kMeanOffset;
  for (int64_t b = 0; b < end; b += 64) __builtin_prefetch(r + b, 1);
  if (part == Part::kGradient) return;
  for (int64_t b = mean_end & ~int64_t{63}; b < mean_end + 2 * dim_; b += 64)
    __builtin_prefetch(r + b, 1);
}

double EmbeddingRows::record_gradients(const int64_t* rows, int64_t n, const float* gradients) {
  double norm2 = 0.0;
  for (int64_t k = 0; k < n; ++k) {
    if (k + kAhead < n) prefetch(rows[k + kAhead], Part::kGradient);
    norm2 += squared_norm(gradients + k * dim_, dim_);
    record_gradient(rows[k], gradients + k * dim_);
  }
  return norm2;
}

void EmbeddingRows::record_updates(const int64_t* rows, int64_t n, const float* deltas,
                                   const float* before) {
  for (int64_t k = 0; k < n; ++k) {
    if (k + kAhead < n) prefetch(rows[k + kAhead], Part::kUpdate);
    record_update(rows[k], deltas + k * dim_, std::sqrt(squared_norm(before + k * dim_, dim_)));
  }
}

double EmbeddingRows::snr(int64_t row) const {
  const Scalars& x = scalars(row);
  if (x.gradients < 2) return std::numeric_limits<double>::quiet_NaN();
  const float* m = grad_mean(row);
  double mm = 0.0;
  for (int64_t j = 0; j < dim_; ++j) mm += static_cast<double>(m[j]) * m[j];
  const double v = x.grad_var;
  if (v <= 0.0) return mm > 0.0 ? std::numeric_limits<double>::infinity() : 0.0;
  return mm / v;
}

double zombie_scale(double snr, double lo, double hi) {
  if (std::isnan(snr)) return hi;
  const double gain = std::isinf(snr) ? 1.0 : snr / (1.0 + snr);
  return std::clamp(gain, lo, hi);
}

double undertrained_boost(double snr, double max_boost) {
  if (std::isnan(snr)) return 1.0;
  const double gain = std::isinf(snr) ? 1.0 : snr / (1.0 + snr);
  return 1.0 + (max_boost - 1.0) * gain;
}

}  // namespace gradscope
