// EmbeddingTracker's auto-fix: scales the gradients of touched zombie rows (and boosts
// under-trained ones) between backward and the optimizer step, logging every act.
#include <ATen/Functions.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "embedding/state.h"

namespace gradscope::torch {

void EmbeddingTracker::State::auto_fix(at::Tensor grad) {
  const std::vector<int64_t>& t = touched.rows();
  const auto T = static_cast<int64_t>(t.size());
  // Zombie test against the median velocity of this step's touched rows (O(T)).
  std::vector<double> vel(T);
  for (int64_t k = 0; k < T; ++k) vel[k] = rows.velocity(t[k]);
  const double median = median_of(vel);
  std::vector<int64_t> idx[2];
  std::vector<double> scale[2], snrs[2];
  for (int64_t k = 0; k < T; ++k) {
    const int64_t r = t[k];
    const double snr = rows.snr(r);
    const bool zombie = options.zombie_rule == ZombieRule::kWindowed
                            ? is_windowed_zombie(rows, r, options.thresholds)
                            : is_zombie(rows, r, median, options.thresholds);
    if (zombie) {
      const double f = zombie_scale(snr, options.fix_min_scale, options.fix_max_scale);
      if (f != 1.0) idx[0].push_back(k), scale[0].push_back(f), snrs[0].push_back(snr);
    } else if (options.boost_undertrained && rows.gradients(r) >= 2 &&
               rows.exposure(r) <= options.undertrained_exposure) {
      const double f = undertrained_boost(snr, options.boost_max);
      if (f != 1.0) idx[1].push_back(k), scale[1].push_back(f), snrs[1].push_back(snr);
    }
  }
  if (idx[0].empty() && idx[1].empty()) return;
  if (grad.is_sparse()) {
    // Scaling a row means scaling its one entry: coalesce (the optimizer sees the same sum).
    grad = grad.coalesce();
    weight.mutable_grad() = grad;
  }
  const char* types[2] = {"ZOMBIE_GRADIENT_SCALE", "UNDERTRAINED_GRADIENT_BOOST"};
  for (int kind = 0; kind < 2; ++kind) {
    if (idx[kind].empty()) continue;
    const auto n = static_cast<int64_t>(idx[kind].size());
    std::vector<int64_t> row_ids(n);
    for (int64_t i = 0; i < n; ++i) row_ids[i] = t[idx[kind][i]];
    at::Tensor rid = at::from_blob(row_ids.data(), {n}, at::kLong).clone();
    at::Tensor f =
        at::from_blob(scale[kind].data(), {n, 1}, at::kDouble).to(grad.scalar_type());
    if (grad.is_sparse()) {
      // Coalesced values are in the order of sorted indices; find each row's position.
      at::Tensor values = grad._values();
      at::Tensor pos = at::searchsorted(grad._indices().reshape({-1}), rid);
      values.index_copy_(0, pos, values.index_select(0, pos) * f);
    } else {
      grad.index_copy_(0, rid, grad.index_select(0, rid) * f);
    }
    EmbeddingIntervention iv;
    iv.time = std::chrono::duration<double>(
                  std::chrono::system_clock::now().time_since_epoch()).count();
    iv.step = step;
    iv.layer = layer;
    iv.type = types[kind];
    iv.rows_affected = n;
    iv.scale_min = *std::min_element(scale[kind].begin(), scale[kind].end());
    iv.scale_max = *std::max_element(scale[kind].begin(), scale[kind].end());
    double sum = 0;
    for (double x : scale[kind]) sum += x;
    iv.scale_mean = sum / n;
    std::vector<double> finite;
    for (double x : snrs[kind])
      if (!std::isnan(x)) finite.push_back(x);
    iv.snr_median =
        finite.empty() ? std::numeric_limits<double>::quiet_NaN() : median_of(finite);
    iv.sample_rows.assign(row_ids.begin(), row_ids.begin() + std::min<int64_t>(n, 16));
    if (options.on_intervention) options.on_intervention(iv);
  }
}

}  // namespace gradscope::torch
