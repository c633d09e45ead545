#include "gradscope/core/compress/gptq.h"

#include <algorithm>
#include <cmath>

#include "gradscope/core/compress/packed.h"
#include "gradscope/core/error.h"

namespace gradscope::compress {
namespace {

// In place: a (n x n, row-major, symmetric positive definite) -> its lower Cholesky factor L.
bool cholesky(std::vector<double>& a, int64_t n) {
  for (int64_t j = 0; j < n; ++j) {
    double d = a[j * n + j];
    for (int64_t k = 0; k < j; ++k) d -= a[j * n + k] * a[j * n + k];
    if (!(d > 0)) return false;
    const double l = std::sqrt(d);
    a[j * n + j] = l;
    for (int64_t i = j + 1; i < n; ++i) {
      double s = a[i * n + j];
      for (int64_t k = 0; k < j; ++k) s -= a[i * n + k] * a[j * n + k];
      a[i * n + j] = s / l;
    }
    for (int64_t k = j + 1; k < n; ++k) a[j * n + k] = 0;
  }
  return true;
}

// H^-1 from H's lower Cholesky factor L: solves L L^T X = I column by column.
std::vector<double> inverse_from_cholesky(const std::vector<double>& l, int64_t n) {
  std::vector<double> inv(static_cast<std::size_t>(n * n), 0.0), y(static_cast<std::size_t>(n));
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t i = 0; i < n; ++i) {  // L y = e_c
      double s = i == c ? 1.0 : 0.0;
      for (int64_t k = 0; k < i; ++k) s -= l[i * n + k] * y[k];
      y[i] = s / l[i * n + i];
    }
    for (int64_t i = n - 1; i >= 0; --i) {  // L^T x = y
      double s = y[i];
      for (int64_t k = i + 1; k < n; ++k) s -= l[k * n + i] * inv[k * n + c];
      inv[i * n + c] = s / l[i * n + i];
    }
  }
  return inv;
}

}  // namespace

std::vector<float> gptq_round(float* w, int64_t units, int64_t cols, const double* gram, int qmax, double damp) {
  if (qmax < 1) throw Error("gptq_round: qmax must be >= 1, got " + std::to_string(qmax));
  if (units < 1 || cols < 1) throw Error("gptq_round: the weight needs units and columns");
  for (int64_t i = 0; i < units * cols; ++i)
    if (!std::isfinite(w[i])) throw Error("gptq_round: the weight holds NaN or Inf");
  for (int64_t i = 0; i < cols * cols; ++i)
    if (!std::isfinite(gram[i])) throw Error("gptq_round: the Gram matrix holds NaN or Inf");
  // The scales of round-to-nearest, from the weights as they are.
  std::vector<float> scales(static_cast<std::size_t>(units));
  std::vector<int32_t> unused(static_cast<std::size_t>(cols));
  for (int64_t j = 0; j < units; ++j) scales[j] = quantise_unit(w + j * cols, cols, qmax, unused.data());
  // H with dead columns set to 1 (their weights meet no input) and the damping on the diagonal.
  std::vector<double> h(gram, gram + cols * cols);
  std::vector<char> dead(static_cast<std::size_t>(cols), 0);
  double mean_diag = 0;
  for (int64_t i = 0; i < cols; ++i) mean_diag += h[i * cols + i];
  mean_diag /= static_cast<double>(cols);
  for (int64_t i = 0; i < cols; ++i) {
    if (h[i * cols + i] <= 0) {
      dead[i] = 1;
      for (int64_t k = 0; k < cols; ++k) h[i * cols + k] = h[k * cols + i] = 0;
      h[i * cols + i] = 1;
    }
    h[i * cols + i] += damp * (mean_diag > 0 ? mean_diag : 1.0);
  }
  if (!cholesky(h, cols)) throw Error("gptq_round: the Gram matrix is not positive definite after damping");
  // U: the upper Cholesky factor of H^-1 (H^-1 = U^T U); row i of U spreads column i's error.
  std::vector<double> u = inverse_from_cholesky(h, cols);
  if (!cholesky(u, cols)) throw Error("gptq_round: the inverse Gram matrix is not positive definite");
  for (int64_t i = 0; i < cols; ++i)  // lower L -> upper U = L^T
    for (int64_t k = i + 1; k < cols; ++k) std::swap(u[i * cols + k], u[k * cols + i]);
  const float fq = static_cast<float>(qmax);
  std::vector<double> row(static_cast<std::size_t>(cols));
  for (int64_t j = 0; j < units; ++j) {
    float* wj = w + j * cols;
    const float s = scales[j];
    for (int64_t i = 0; i < cols; ++i) row[i] = wj[i];
    for (int64_t i = 0; i < cols; ++i) {
      const float q = s > 0 ? std::clamp(std::nearbyint(static_cast<float>(row[i]) / s), -fq, fq) : 0.0f;
      const float value = q * s;
      if (!dead[i]) {
        const double err = (row[i] - static_cast<double>(value)) / u[i * cols + i];
        for (int64_t k = i + 1; k < cols; ++k) row[k] -= err * u[i * cols + k];
      }
      wj[i] = value;
    }
  }
  return scales;
}

}  // namespace gradscope::compress
