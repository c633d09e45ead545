#include "update_cosines.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "gradscope/core/error.h"

namespace gradscope::scenarios {

UpdateCosines::UpdateCosines(int64_t rows, int64_t dim, double update_ratio_lo)
    : rows_(rows), dim_(dim), ratio_(update_ratio_lo) {
  if (rows < 1 || dim < 1)
    throw Error("update cosines: a table of " + std::to_string(rows) + " x " + std::to_string(dim) +
                " rows; both sizes must be >= 1");
  updates_.assign(rows, 0);
  previous_.assign(rows * dim, 0.0);
  cosines_.resize(rows);
  norms_.resize(rows);
}

void UpdateCosines::add(const at::Tensor& ids, const at::Tensor& before, const at::Tensor& after) {
  const int64_t n = ids.numel();
  const std::vector<int64_t> shape = {n, dim_};
  if (before.sizes() != at::IntArrayRef(shape) || after.sizes() != at::IntArrayRef(shape))
    throw Error("update cosines: " + std::to_string(n) + " ids need rows of " + std::to_string(n) + " x " +
                std::to_string(dim_) + " before and after");
  const at::Tensor id = ids.to(at::kLong).contiguous();
  const at::Tensor b = before.to(at::kDouble).contiguous(), a = after.to(at::kDouble).contiguous();
  const int64_t* ip = id.data_ptr<int64_t>();
  const double* bp = b.data_ptr<double>();
  const double* ap = a.data_ptr<double>();
  for (int64_t k = 0; k < n; ++k) {
    const int64_t row = ip[k];
    if (row < 0 || row >= rows_)
      throw Error("update cosines: id " + std::to_string(row) + " is outside [0, " + std::to_string(rows_) + ")");
    double delta2 = 0, before2 = 0, dot = 0, prev2 = 0;
    double* prev = &previous_[row * dim_];
    for (int64_t j = 0; j < dim_; ++j) {
      const double d = ap[k * dim_ + j] - bp[k * dim_ + j];
      delta2 += d * d;
      before2 += bp[k * dim_ + j] * bp[k * dim_ + j];
      dot += d * prev[j];
      prev2 += prev[j] * prev[j];
    }
    if (!(std::sqrt(delta2) > ratio_ * std::sqrt(before2))) continue;  // not a real update
    if (updates_[row] > 0 && prev2 > 0) cosines_[row].push_back(static_cast<float>(dot / std::sqrt(delta2 * prev2)));
    for (int64_t j = 0; j < dim_; ++j) prev[j] = ap[k * dim_ + j] - bp[k * dim_ + j];
    norms_[row].push_back(static_cast<float>(std::sqrt(delta2)));
    ++updates_[row];
  }
}

double UpdateCosines::mean_cosine(int64_t row) const { return recent_mean_cosine(row, static_cast<int64_t>(cosines_[row].size())); }

double UpdateCosines::recent_mean_cosine(int64_t row, int64_t k) const {
  const std::vector<float>& c = cosines_[row];
  const auto n = static_cast<int64_t>(c.size());
  if (n == 0 || k < 1) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (int64_t i = std::max<int64_t>(0, n - k); i < n; ++i) sum += c[i];
  return sum / static_cast<double>(std::min(n, k));
}

UpdateCosines::Windows UpdateCosines::windows(int64_t row, int64_t k) const {
  if (k < 1) throw Error("update cosines: windows of " + std::to_string(k) + " cosines; need >= 1");
  const std::vector<float>& c = cosines_[row];
  const std::vector<float>& n = norms_[row];
  Windows w;
  w.completed = static_cast<int64_t>(c.size()) / k;
  // Mean cosine and mean norm of window `i` (0-based): cosines [i k, (i + 1) k).
  auto mean_of = [&](int64_t i, double& cosine, double& norm) {
    cosine = norm = 0;
    for (int64_t j = i * k; j < (i + 1) * k; ++j) cosine += c[j], norm += n[j + 1];
    cosine /= static_cast<double>(k);
    norm /= static_cast<double>(k);
  };
  if (w.completed >= 1) mean_of(w.completed - 1, w.last_cosine, w.last_norm);
  if (w.completed >= 2) mean_of(w.completed - 2, w.prior_cosine, w.prior_norm);
  return w;
}

}  // namespace gradscope::scenarios
