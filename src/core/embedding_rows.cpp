#include "gradscope/core/embedding_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "gradscope/core/error.h"
#include "gradscope/core/half.h"

namespace gradscope {
namespace {
void check_rate(double r, const char* name) {
  if (!(r >= 0.0 && r < 1.0))
    throw Error(std::string("embedding rows: ") + name + " must be in [0, 1)");
}
}  // namespace

EmbeddingRows::EmbeddingRows(int64_t rows, int64_t dim, EmbeddingRowsOptions options)
    : rows_(rows), dim_(dim), options_(options) {
  if (rows < 0 || dim <= 0) throw Error("embedding rows: need rows >= 0 and dim > 0");
  check_rate(options.velocity_ema, "velocity_ema");
  check_rate(options.oscillation_ema, "oscillation_ema");
  check_rate(options.gradient_ema, "gradient_ema");
  const auto n = static_cast<std::size_t>(rows);
  exposure_.assign(n, 0);
  last_seen_.assign(n, -1);
  velocity_.assign(n, 0.f);
  oscillation_.assign(n, 0.f);
  updates_.assign(n, 0);
  gradients_.assign(n, 0);
  grad_var_.assign(n, 0.f);
  grad_mean_.assign(n * static_cast<std::size_t>(dim), 0.f);
  prev_update_.assign(n * static_cast<std::size_t>(dim), 0);
}

void EmbeddingRows::expose(int64_t row, int64_t step) {
  if (step > std::numeric_limits<int32_t>::max())
    throw Error("embedding rows: step " + std::to_string(step) + " exceeds 2^31 - 1");
  if (last_seen_[row] == static_cast<int32_t>(step) && exposure_[row] > 0) return;
  ++exposure_[row];
  last_seen_[row] = static_cast<int32_t>(step);
}

void EmbeddingRows::record_gradient(int64_t row, const float* g) {
  float* m = grad_mean_.data() + row * dim_;
  if (gradients_[row]++ == 0) {
    std::copy(g, g + dim_, m);
    grad_var_[row] = 0.f;
    return;
  }
  // Finch (2009) eq. 143: diff = x - mu; incr = a diff; mu += incr; S = (1 - a)(S + diff.incr)
  const double a = 1.0 - options_.gradient_ema;
  double diff_incr = 0.0;
  for (int64_t j = 0; j < dim_; ++j) {
    const double diff = static_cast<double>(g[j]) - m[j];
    m[j] = static_cast<float>(m[j] + a * diff);
    diff_incr += a * diff * diff;
  }
  grad_var_[row] = static_cast<float>((1.0 - a) * (grad_var_[row] + diff_incr));
}

void EmbeddingRows::record_update(int64_t row, const float* delta, double row_norm) {
  double dd = 0.0;
  for (int64_t j = 0; j < dim_; ++j) dd += static_cast<double>(delta[j]) * delta[j];
  const double norm = std::sqrt(dd);
  const double rv = options_.velocity_ema;
  velocity_[row] = static_cast<float>(rv * velocity_[row] + (1.0 - rv) * norm);
  if (!(norm > options_.update_ratio_lo * row_norm) || norm == 0.0) return;
  uint16_t* prev = prev_update_.data() + row * dim_;
  if (updates_[row] > 0) {
    double dot = 0.0, pp = 0.0;
    for (int64_t j = 0; j < dim_; ++j) {
      const double p = bfloat16_to_float(prev[j]);
      dot += p * delta[j];
      pp += p * p;
    }
    if (pp > 0.0) {
      const double cosine = dot / (std::sqrt(pp) * norm);
      const double ro = options_.oscillation_ema;
      oscillation_[row] = static_cast<float>(ro * oscillation_[row] + (1.0 - ro) * cosine);
    }
  }
  for (int64_t j = 0; j < dim_; ++j) prev[j] = float_to_bfloat16(delta[j]);
  ++updates_[row];
}

double EmbeddingRows::snr(int64_t row) const {
  if (gradients_[row] < 2) return std::numeric_limits<double>::quiet_NaN();
  const float* m = grad_mean_.data() + row * dim_;
  double mm = 0.0;
  for (int64_t j = 0; j < dim_; ++j) mm += static_cast<double>(m[j]) * m[j];
  const double v = grad_var_[row];
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
