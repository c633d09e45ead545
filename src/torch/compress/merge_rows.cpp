// Merge candidates of an embedding table: rows near-identical to a more looked-up row may share
// its stored values (core/compress/rows.h, RowRuleOptions::merge).
#include <torch/utils.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "gradscope/core/error.h"
#include "gradscope/torch/compress/apply_recipe.h"

namespace gradscope::compress {

void add_merge_candidates(RowProfile& t, const at::Tensor& table, const MergeOptions& options) {
  if (table.dim() != 2 || table.size(0) != t.rows || table.size(1) != t.dim)
    throw Error("embedding table '" + t.table + "': the table and its row profile differ in shape");
  if (!(options.min_cosine <= 1) || !(options.max_norm_ratio >= 1))
    throw Error("embedding table '" + t.table + "': merge bounds need a cosine <= 1 and a norm ratio >= 1");
  ::torch::NoGradGuard no_grad;
  const at::Tensor x = table.detach().to(at::kDouble).contiguous();
  const at::Tensor norm = x.norm(2, at::IntArrayRef{1}).contiguous();
  const at::Tensor unit = (x / norm.clamp_min(1e-300).unsqueeze(1)).contiguous();
  const double* u = unit.data_ptr<double>();
  const double* n = norm.data_ptr<double>();
  const double* v = x.data_ptr<double>();
  const int64_t d = t.dim;
  std::vector<int64_t> order(static_cast<std::size_t>(t.rows));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return t.lookups[a] > t.lookups[b]; });
  t.merge_into.assign(order.size(), -1);
  t.merge_sq.assign(order.size(), 0.0);
  // Greedy over rows, most looked-up first: each is compared with the representatives so far
  // (O(rows x representatives x dim); a MovieLens item table of 6,170 x 64 takes about a second).
  std::vector<int64_t> reps;
  for (int64_t i : order) {
    if (!t.exposed[i]) continue;
    int64_t best = -1;
    double best_cos = options.min_cosine;
    for (int64_t r : reps) {
      const double ratio = std::max(n[i], n[r]) / std::max(std::min(n[i], n[r]), 1e-300);
      if (ratio > options.max_norm_ratio) continue;
      double c = 0;
      for (int64_t k = 0; k < d; ++k) c += u[i * d + k] * u[r * d + k];
      if (c >= best_cos) best = r, best_cos = c;
    }
    if (best < 0) {
      reps.push_back(i);
      continue;
    }
    double sq = 0;
    for (int64_t k = 0; k < d; ++k) sq += (v[i * d + k] - v[best * d + k]) * (v[i * d + k] - v[best * d + k]);
    t.merge_into[i] = best;
    t.merge_sq[i] = sq;
  }
}

}  // namespace gradscope::compress
