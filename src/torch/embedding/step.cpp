// EmbeddingTracker's tracked step: before the optimizer step, the touched rows' counts,
// snapshots and gradients; after it, their real updates.
//
// Rows are read where they lie (float32 rows with unit stride: no gather, no copy, no
// coalesce), and buffers persist between steps. On a table larger than the caches a step
// costs its cache and TLB misses, which docs/benchmarks.md measures pass by pass: the order
// of the passes below is what those measurements kept.
#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "embedding/state.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {
namespace {

constexpr int64_t kAhead = 4;

// Row pointers of a float32 matrix whose rows have unit stride, nullptr for any other layout
// (the caller then gathers a float32 copy).
const float* direct_rows(const at::Tensor& m) {
  if (m.scalar_type() != at::kFloat || m.is_sparse() || m.stride(1) != 1) return nullptr;
  return m.data_ptr<float>();
}

void prefetch_row(const float* row, int64_t dim) {
  const char* p = reinterpret_cast<const char*>(row);
  for (int64_t b = 0; b < dim * 4; b += 64) __builtin_prefetch(p + b);
}

// A [T, dim] float32 tensor of rows given by pointers (for on_step's statistics).
at::Tensor stack_rows(const std::vector<const float*>& rows, int64_t dim) {
  at::Tensor out = at::empty({static_cast<int64_t>(rows.size()), dim}, at::kFloat);
  float* o = out.data_ptr<float>();
  for (std::size_t k = 0; k < rows.size(); ++k)
    std::memcpy(o + k * dim, rows[k], static_cast<std::size_t>(dim) * sizeof(float));
  return out;
}

}  // namespace

at::Tensor EmbeddingTracker::State::touched_tensor() const {
  const std::vector<int64_t>& t = touched.rows();
  return at::from_blob(const_cast<int64_t*>(t.data()), {static_cast<int64_t>(t.size())},
                       at::kLong)
      .clone();
}

// Where each touched row's gradient lies: in the dense gradient, in the sparse gradient's
// values (summed where a row repeats), or in a gathered copy.
void EmbeddingTracker::State::locate_gradients(const at::Tensor& grad) {
  grad_rows.clear();
  grad_keep = at::Tensor();
  if (!grad.defined()) return;
  const std::vector<int64_t>& t = touched.rows();
  const auto T = static_cast<int64_t>(t.size());
  const int64_t dim = rows.dim();
  if (grad.is_sparse()) {
    const at::Tensor gi = grad._indices().reshape({-1}).contiguous();
    grad_keep = grad._values().to(at::kFloat).contiguous();
    sparse_gradient_rows(touched, gi.data_ptr<int64_t>(), gi.numel(), grad_keep.data_ptr<float>(),
                         dim, grad_sums, zero_row.data(), grad_rows);
    return;
  }
  const float* g = direct_rows(grad);
  const int64_t stride = g ? grad.stride(0) : dim;
  if (!g) g = (grad_keep = gather(grad, touched_tensor())).data_ptr<float>();
  grad_rows.resize(static_cast<std::size_t>(T));
  for (int64_t k = 0; k < T; ++k) grad_rows[k] = g + (grad_keep.defined() ? k : t[k]) * stride;
}

// The gradient hashes ask whether the ranks hold the same gradient (averaged); when they do
// not, each rank's state of a row uses its own gradient and values.
void EmbeddingTracker::State::prepare_merge() {
  ranks_part.who = "embedding '" + layer + "'";
  ranks_part.step = step;
  ranks_part.rows = rows.rows();
  ranks_part.dim = rows.dim();
  ranks_part.tracked = tracking;
  ranks_part.touched = &touched;
  ranks_part.hashes.assign(tracking ? touched.rows().size() : 0, 0);
  if (!tracking) return;
  locate_gradients(weight.grad());
  for (std::size_t k = 0; k < grad_rows.size(); ++k) ranks_part.hashes[k] = hash_row(grad_rows[k], rows.dim());
}

void EmbeddingTracker::State::merged() {
  if (!ranks_part.tracked || ranks_part.same || ranks_differ) return;
  ranks_differ = true;
  warn(who() + "gradients differ across ranks on rows several ranks looked up (first: step " +
       std::to_string(step) + "): not averaged, so the velocity, oscillation and SNR of a row are "
       "this rank's own; counts and exposure are the job's");
}

bool EmbeddingTracker::State::begin_step() {
  if (in_step) throw Error(who() + "before_step() called twice without after_step()");
  const bool track = step % options.track_every == 0;
  if (track) {  // before any state changes, so a failed step leaves none
    check_weight();
    check_gradient(weight.grad());
  }
  in_step = true;
  tracking = track;
  if (tracking) touched.build(observed, negatives, padding_idx, rows.rows());
  return tracking;
}

void EmbeddingTracker::before_step() {
  State& s = *state_;
  const bool tracking = s.begin_step();
  // Before the empty-batch return: a rank with no rows still takes part in the collective.
  if (tracking && s.ranks) {
    s.prepare_merge();
    s.ranks->merge({&s.ranks_part});
    s.merged();
  }
  if (tracking) s.finish_before_step();
}

void EmbeddingTracker::State::finish_before_step() {
  State& s = *this;
  at::NoGradGuard no_grad;
  const std::vector<int64_t>& t = s.touched.rows();
  const auto T = static_cast<int64_t>(t.size());
  const int64_t dim = s.rows.dim();
  if (T == 0) {
    s.grad_norms.emplace_back(s.step, 0.0);
    return;
  }

  at::Tensor grad = s.weight.grad();
  s.locate_gradients(grad);
  if (!grad.defined())
    s.warn(s.who() + "gradient undefined at a tracked step (first: step " +
           std::to_string(s.step) + "); its gradient statistics were skipped");

  const float* w = direct_rows(s.weight);
  const int64_t w_stride = w ? s.weight.stride(0) : dim;
  at::Tensor w_copy;
  if (!w) w = (w_copy = gather(s.weight, s.touched_tensor())).data_ptr<float>();
  s.before.resize(static_cast<std::size_t>(T * dim));
  s.before_norm.resize(static_cast<std::size_t>(T));
  const bool has_grad = !s.grad_rows.empty();
  // The model's work since the lookup has pushed these rows' pages out of the TLB, and a
  // software prefetch that misses the TLB waits for its page walk. So first one plain load per
  // record and per weight row, in a loop short enough that the CPU runs many iterations ahead
  // and walks several rows' page tables at once; then counts and snapshots with plain loads.
  {
    float sink = 0;
    for (int64_t k = 0; k < T; ++k)
      sink += static_cast<float>(s.rows.exposure(t[k])) +
              w[(w_copy.defined() ? k : t[k]) * w_stride];
    volatile float keep = sink;  // the values are not needed, only the loads
    (void)keep;
  }
  for (int64_t k = 0; k < T; ++k) {
    const int64_t r = t[k];
    s.rows.expose(r, s.step);
    s.rows.count_lookups(r, s.touched.lookups()[k], s.touched.negatives()[k]);
    const float* row = w + (w_copy.defined() ? k : r) * w_stride;
    std::memcpy(s.before.data() + k * dim, row, static_cast<std::size_t>(dim) * sizeof(float));
    s.before_norm[k] = std::sqrt(squared_norm(row, dim));
  }
  // Then the gradients, the records' gradient lines prefetched (their pages now in the TLB).
  double norm2 = 0.0;
  for (int64_t k = 0; has_grad && k < T; ++k) {
    if (k + kAhead < T) {
      s.rows.prefetch(t[k + kAhead], EmbeddingRows::Part::kGradient);
      prefetch_row(s.grad_rows[k + kAhead], dim);
    }
    norm2 += squared_norm(s.grad_rows[k], dim);
    s.rows.record_gradient(t[k], s.grad_rows[k]);
  }
  s.grad_norms.emplace_back(s.step, has_grad ? std::sqrt(norm2)
                                             : std::numeric_limits<double>::quiet_NaN());

  if (s.options.auto_fix && has_grad) s.auto_fix(grad);
  if (s.options.on_step && has_grad)
    s.options.on_step(
        {Record{s.step, s.layer, Site::kEmbeddingRows, stats_of(stack_rows(s.grad_rows, dim),
                                                                s.layer)}});
}

void EmbeddingTracker::after_step() {
  State& s = *state_;
  if (!s.in_step) throw Error(s.who() + "after_step() without before_step()");
  s.in_step = false;
  const std::vector<int64_t>& t = s.touched.rows();
  const auto T = static_cast<int64_t>(t.size());
  std::vector<Record> update;  // for on_step, handed on once the step is complete
  if (s.tracking && T > 0) {
    s.check_weight();  // the update may have replaced it
    at::NoGradGuard no_grad;
    const int64_t dim = s.rows.dim();
    const float* w = direct_rows(s.weight);
    const int64_t w_stride = w ? s.weight.stride(0) : dim;
    at::Tensor w_copy;
    if (!w) w = (w_copy = gather(s.weight, s.touched_tensor())).data_ptr<float>();
    const bool all = static_cast<bool>(s.options.on_step);  // on_step needs every row's delta
    s.delta.resize(static_cast<std::size_t>((all ? T : 1) * dim));
    for (int64_t k = 0; k < T; ++k) {
      if (k + kAhead < T) {
        const int64_t next = t[k + kAhead];
        s.rows.prefetch(next, EmbeddingRows::Part::kUpdate);
        prefetch_row(w + (w_copy.defined() ? k + kAhead : next) * w_stride, dim);
      }
      const float* after = w + (w_copy.defined() ? k : t[k]) * w_stride;
      const float* before = s.before.data() + k * dim;
      float* d = s.delta.data() + (all ? k * dim : 0);
      for (int64_t j = 0; j < dim; ++j) d[j] = after[j] - before[j];
      s.rows.record_update(t[k], d, s.before_norm[k]);
    }
    if (all) {
      const at::Tensor delta = at::from_blob(s.delta.data(), {T, dim}, at::kFloat);
      update.push_back(Record{s.step, s.layer, Site::kUpdate, stats_of(delta, s.layer)});
    }
  }
  s.observed.clear();
  s.negatives.clear();
  ++s.step;
  // Last, as the audit's step does: a callback that throws finds the step complete.
  if (!update.empty()) s.options.on_step(update);
}

}  // namespace gradscope::torch
