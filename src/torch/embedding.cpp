// EmbeddingTracker: gathers the touched rows of one table and feeds gradscope::EmbeddingRows.
#include "gradscope/torch/embedding.h"

#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>
#include <c10/util/Exception.h>
#include <torch/nn/modules/embedding.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <sstream>

#include "gradscope/core/error.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {

struct EmbeddingTracker::State {
  std::string layer;
  EmbeddingTrackerOptions options;
  std::shared_ptr<::torch::nn::Module> module;
  ::torch::nn::EmbeddingImpl* embedding = nullptr;
  ::torch::nn::EmbeddingBagImpl* bag = nullptr;
  at::Tensor weight;
  int64_t padding_idx = -1;
  EmbeddingRows rows;
  int64_t step = 0;
  std::vector<int64_t> observed;  // indices seen this step (with duplicates), all roles
  std::vector<int64_t> negatives; // those of them observed as Role::kNegative
  std::vector<int64_t> touched;   // sorted unique
  at::Tensor touched_t, before;   // int64 [T], float32 [T, dim]
  bool in_step = false;
  bool tracking = false;
  std::vector<std::pair<int64_t, double>> grad_norms;
  std::vector<std::string> warnings;

  State(std::string l, EmbeddingTrackerOptions o, std::shared_ptr<::torch::nn::Module> m, at::Tensor w)
      : layer(std::move(l)), options(std::move(o)), module(std::move(m)), weight(std::move(w)),
        rows(weight.size(0), weight.size(1),
             EmbeddingRowsOptions{options.thresholds.velocity_ema, options.thresholds.oscillation_ema,
                                  options.gradient_ema, options.thresholds.update_ratio_lo,
                                  options.thresholds.zombie_window}) {}

  std::string who() const { return "embedding '" + layer + "': "; }
  void warn(const std::string& w) {
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
  }
  void check_weight() const;
  void check_gradient(const at::Tensor& grad) const;
  at::Tensor checked_indices(const at::Tensor& indices) const;
  Error forward_error(const at::Tensor& indices, const c10::Error& e) const;
};

namespace {
// A weight the tracker can read: a defined 2-D floating-point tensor on the CPU.
void check_readable(const at::Tensor& w, const std::string& who) {
  if (!w.defined() || w.dim() != 2) throw Error(who + "weight must be 2-D");
  if (!w.device().is_cpu())
    throw Error(who + "weight on device " + w.device().str() + ", which this build cannot read (CPU only)");
  if (!at::isFloatingType(w.scalar_type()))
    throw Error(who + "unsupported weight dtype " + std::string(c10::toString(w.scalar_type())));
}

at::Tensor weight_of(::torch::nn::Module& m, const std::string& layer,
                     ::torch::nn::EmbeddingImpl** emb, ::torch::nn::EmbeddingBagImpl** bag) {
  *emb = dynamic_cast<::torch::nn::EmbeddingImpl*>(&m);
  *bag = dynamic_cast<::torch::nn::EmbeddingBagImpl*>(&m);
  if (!*emb && !*bag)
    throw Error("embedding '" + layer + "': module " + m.name() +
                " is not an embedding (torch::nn::Embedding or EmbeddingBag)");
  at::Tensor w = *emb ? (*emb)->weight : (*bag)->weight;
  check_readable(w, "embedding '" + layer + "': ");
  return w;
}

// Rows of `w` at `idx` as a contiguous float32 [T, dim] copy.
at::Tensor gather(const at::Tensor& w, const at::Tensor& idx) {
  return w.index_select(0, idx).to(at::kFloat).contiguous();
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}
}  // namespace

// weight.set_data() can give the parameter another shape under a live tracker. The per-row
// state and every index check are sized to the table at attach time, so any other shape is
// an error here, before a row is gathered or a pointer offset by the old width.
void EmbeddingTracker::State::check_weight() const {
  check_readable(weight, who());
  if (weight.size(0) != rows.rows() || weight.size(1) != rows.dim())
    throw Error(who() + "weight shape changed from [" + std::to_string(rows.rows()) + ", " +
                std::to_string(rows.dim()) + "] to " + shape_of(weight) +
                " since the tracker was attached; create a new tracker");
}

// Rows of a gradient are read dim floats at a time: it must have the weight's shape, and a
// sparse one must be row-sparse ([nnz] row indices, [nnz, dim] values).
void EmbeddingTracker::State::check_gradient(const at::Tensor& grad) const {
  if (!grad.defined()) return;
  if (!grad.sizes().equals(weight.sizes()))
    throw Error(who() + "gradient shape " + shape_of(grad) + " differs from the weight's " + shape_of(weight));
  if (!grad.device().is_cpu())
    throw Error(who() + "gradient on device " + grad.device().str() + ", which this build cannot read (CPU only)");
  if (grad.is_sparse() && grad.sparse_dim() != 1)
    throw Error(who() + "sparse gradient with " + std::to_string(grad.sparse_dim()) +
                " sparse dims; only row-sparse gradients (sparse_dim 1, as Embedding gives) are read");
}

// `indices` flattened to int64, each checked against the rows.
at::Tensor EmbeddingTracker::State::checked_indices(const at::Tensor& indices) const {
  if (!indices.defined()) throw Error(who() + "undefined indices");
  if (at::isFloatingType(indices.scalar_type()) || indices.scalar_type() == at::kBool)
    throw Error(who() + "indices must be integers, got " + std::string(c10::toString(indices.scalar_type())));
  const at::Tensor flat = indices.reshape({-1}).to(at::kLong).contiguous();
  const int64_t* p = flat.data_ptr<int64_t>();
  for (int64_t i = 0, n = flat.numel(); i < n; ++i)
    if (p[i] < 0 || p[i] >= rows.rows())
      throw Error(who() + "index " + std::to_string(p[i]) + " out of range [0, " + std::to_string(rows.rows()) + ")");
  return flat;
}

// LibTorch rejected a lookup (on an untracked step nothing was checked before it): the
// tracker's own message when it has one, else LibTorch's, without its backtrace.
Error EmbeddingTracker::State::forward_error(const at::Tensor& indices, const c10::Error& e) const {
  check_weight();
  checked_indices(indices);
  return Error(who() + "forward: " + e.msg());
}

EmbeddingTracker::EmbeddingTracker(std::shared_ptr<::torch::nn::Module> module, std::string layer,
                                   EmbeddingTrackerOptions options) {
  if (!module) throw Error("embedding '" + layer + "': null module");
  if (options.track_every < 1) throw Error("embedding '" + layer + "': track_every must be >= 1");
  if (!(options.fix_min_scale > 0 && options.fix_min_scale <= options.fix_max_scale))
    throw Error("embedding '" + layer + "': need 0 < fix_min_scale <= fix_max_scale");
  options.thresholds.validate();
  ::torch::nn::EmbeddingImpl* emb = nullptr;
  ::torch::nn::EmbeddingBagImpl* bag = nullptr;
  at::Tensor w = weight_of(*module, layer, &emb, &bag);
  state_ = std::make_unique<State>(std::move(layer), std::move(options), std::move(module), w);
  state_->embedding = emb;
  state_->bag = bag;
  if (emb && emb->options.padding_idx()) {
    int64_t p = *emb->options.padding_idx();
    state_->padding_idx = p < 0 ? p + w.size(0) : p;
  }
}

EmbeddingTracker::~EmbeddingTracker() = default;

at::Tensor EmbeddingTracker::forward(const at::Tensor& indices, Role role) {
  if (!state_->embedding) throw Error(state_->who() + "forward(indices) needs an Embedding");
  observe(indices, role);
  try {
    return state_->embedding->forward(indices);
  } catch (const c10::Error& e) {
    throw state_->forward_error(indices, e);
  }
}

at::Tensor EmbeddingTracker::forward(const at::Tensor& input, const at::Tensor& offsets,
                                     const at::Tensor& per_sample_weights) {
  if (!state_->bag) throw Error(state_->who() + "forward(input, offsets) needs an EmbeddingBag");
  observe(input);
  try {
    return state_->bag->forward(input, offsets, per_sample_weights);
  } catch (const c10::Error& e) {
    throw state_->forward_error(input, e);
  }
}

void EmbeddingTracker::observe(const at::Tensor& indices, Role role) {
  State& s = *state_;
  if (s.step % s.options.track_every != 0) return;
  s.check_weight();
  const at::Tensor flat = s.checked_indices(indices);
  const int64_t* p = flat.data_ptr<int64_t>();
  s.observed.insert(s.observed.end(), p, p + flat.numel());
  if (role == Role::kNegative) s.negatives.insert(s.negatives.end(), p, p + flat.numel());
}

namespace {

// Calls fn(value, occurrences) for each run of equal values in a sorted vector.
template <class Fn>
void for_each_run(const std::vector<int64_t>& sorted, Fn fn) {
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i + 1;
    while (j < sorted.size() && sorted[j] == sorted[i]) ++j;
    fn(sorted[i], static_cast<uint32_t>(std::min<std::size_t>(j - i, UINT32_MAX)));
    i = j;
  }
}

}  // namespace

void EmbeddingTracker::before_step() {
  State& s = *state_;
  if (s.in_step) throw Error(s.who() + "before_step() called twice without after_step()");
  const bool tracking = s.step % s.options.track_every == 0;
  if (tracking) {  // before any state changes, so a failed step leaves none
    s.check_weight();
    s.check_gradient(s.weight.grad());
  }
  s.in_step = true;
  s.tracking = tracking;
  if (!s.tracking) return;
  at::NoGradGuard no_grad;
  std::vector<int64_t>& t = s.touched;
  t = std::move(s.observed);
  s.observed.clear();
  std::sort(t.begin(), t.end());
  // Every occurrence is a lookup; the padding row is not a row the model learns.
  for_each_run(t, [&](int64_t r, uint32_t n) {
    if (r != s.padding_idx) s.rows.count_lookups(r, n, 0);
  });
  std::sort(s.negatives.begin(), s.negatives.end());
  for_each_run(s.negatives, [&](int64_t r, uint32_t n) {
    if (r != s.padding_idx) s.rows.count_lookups(r, 0, n);
  });
  s.negatives.clear();
  t.erase(std::unique(t.begin(), t.end()), t.end());
  if (s.padding_idx >= 0) t.erase(std::remove(t.begin(), t.end(), s.padding_idx), t.end());
  const auto T = static_cast<int64_t>(t.size());
  const int64_t dim = s.rows.dim();
  for (int64_t r : t) s.rows.expose(r, s.step);
  s.touched_t = at::from_blob(t.data(), {T}, at::kLong).clone();
  if (T == 0) {
    s.grad_norms.emplace_back(s.step, 0.0);
    return;
  }

  // The touched rows' gradient, dense or sparse, as float32 [T, dim].
  at::Tensor grad = s.weight.grad();
  at::Tensor g;
  if (!grad.defined()) {
    s.warn(s.who() + "gradient undefined at a tracked step (first: step " +
           std::to_string(s.step) + "); its gradient statistics were skipped");
  } else if (grad.is_sparse()) {
    grad = grad.coalesce();
    s.weight.mutable_grad() = grad;
    const at::Tensor gi = grad._indices().reshape({-1}).contiguous();
    const at::Tensor gv = grad._values().to(at::kFloat).contiguous();
    g = at::zeros({T, dim}, at::kFloat);
    const int64_t* ip = gi.data_ptr<int64_t>();
    const float* vp = gv.data_ptr<float>();
    float* out = g.data_ptr<float>();
    std::size_t k = 0;  // both sorted: one merge pass
    for (int64_t i = 0; i < gi.numel(); ++i) {
      while (k < t.size() && t[k] < ip[i]) ++k;
      if (k == t.size()) break;
      if (t[k] == ip[i]) std::copy(vp + i * dim, vp + (i + 1) * dim, out + k * dim);
    }
  } else {
    g = gather(grad, s.touched_t);
  }

  double norm2 = std::numeric_limits<double>::quiet_NaN();
  if (g.defined()) {
    norm2 = s.rows.record_gradients(t.data(), T, g.data_ptr<float>());
  }
  s.grad_norms.emplace_back(s.step, std::sqrt(norm2));

  if (s.options.auto_fix && g.defined()) {
    // Zombie test against the median velocity of this step's touched rows (O(T)).
    std::vector<double> vel(T);
    for (int64_t k = 0; k < T; ++k) vel[k] = s.rows.velocity(t[k]);
    const double median = median_of(vel);
    std::vector<int64_t> idx[2];
    std::vector<double> scale[2], snrs[2];
    for (int64_t k = 0; k < T; ++k) {
      const int64_t r = t[k];
      const double snr = s.rows.snr(r);
      const bool zombie = s.options.zombie_rule == ZombieRule::kWindowed
                              ? is_windowed_zombie(s.rows, r, s.options.thresholds)
                              : is_zombie(s.rows, r, median, s.options.thresholds);
      if (zombie) {
        const double f = zombie_scale(snr, s.options.fix_min_scale, s.options.fix_max_scale);
        if (f != 1.0) idx[0].push_back(k), scale[0].push_back(f), snrs[0].push_back(snr);
      } else if (s.options.boost_undertrained && s.rows.gradients(r) >= 2 &&
                 s.rows.exposure(r) <= s.options.undertrained_exposure) {
        const double f = undertrained_boost(snr, s.options.boost_max);
        if (f != 1.0) idx[1].push_back(k), scale[1].push_back(f), snrs[1].push_back(snr);
      }
    }
    const char* types[2] = {"ZOMBIE_GRADIENT_SCALE", "UNDERTRAINED_GRADIENT_BOOST"};
    for (int kind = 0; kind < 2; ++kind) {
      if (idx[kind].empty()) continue;
      const auto n = static_cast<int64_t>(idx[kind].size());
      std::vector<int64_t> row_ids(n);
      for (int64_t i = 0; i < n; ++i) row_ids[i] = t[idx[kind][i]];
      at::Tensor rid = at::from_blob(row_ids.data(), {n}, at::kLong).clone();
      at::Tensor f = at::from_blob(scale[kind].data(), {n, 1}, at::kDouble).to(grad.scalar_type());
      if (grad.is_sparse()) {
        // Coalesced values are in the order of sorted indices; find each row's position.
        at::Tensor values = grad._values();
        at::Tensor pos = at::searchsorted(grad._indices().reshape({-1}), rid);
        values.index_copy_(0, pos, values.index_select(0, pos) * f);
      } else {
        grad.index_copy_(0, rid, grad.index_select(0, rid) * f);
      }
      EmbeddingIntervention iv;
      iv.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
      iv.step = s.step;
      iv.layer = s.layer;
      iv.type = types[kind];
      iv.rows_affected = n;
      iv.scale_min = *std::min_element(scale[kind].begin(), scale[kind].end());
      iv.scale_max = *std::max_element(scale[kind].begin(), scale[kind].end());
      double sum = 0;
      for (double x : scale[kind]) sum += x;
      iv.scale_mean = sum / n;
      std::vector<double> finite;
      for (double x : snrs[kind]) if (!std::isnan(x)) finite.push_back(x);
      iv.snr_median = finite.empty() ? std::numeric_limits<double>::quiet_NaN() : median_of(finite);
      iv.sample_rows.assign(row_ids.begin(), row_ids.begin() + std::min<int64_t>(n, 16));
      if (s.options.on_intervention) s.options.on_intervention(iv);
    }
  }

  if (s.options.on_step && g.defined())
    s.options.on_step({Record{s.step, s.layer, Site::kEmbeddingRows, stats_of(g, s.layer)}});
  s.before = gather(s.weight, s.touched_t);
}

void EmbeddingTracker::after_step() {
  State& s = *state_;
  if (!s.in_step) throw Error(s.who() + "after_step() without before_step()");
  s.in_step = false;
  if (s.tracking && !s.touched.empty()) {
    s.check_weight();  // the update may have replaced it
    at::NoGradGuard no_grad;
    const at::Tensor delta = (gather(s.weight, s.touched_t) - s.before).contiguous();
    s.rows.record_updates(s.touched.data(), static_cast<int64_t>(s.touched.size()),
                          delta.data_ptr<float>(), s.before.data_ptr<float>());
    if (s.options.on_step)
      s.options.on_step({Record{s.step, s.layer, Site::kUpdate, stats_of(delta, s.layer)}});
  }
  s.observed.clear();
  s.negatives.clear();
  ++s.step;
}

void EmbeddingTracker::step(::torch::optim::Optimizer& optimizer) {
  before_step();
  optimizer.step();
  after_step();
}

void EmbeddingTracker::step(const std::function<void()>& apply_update) {
  before_step();
  apply_update();
  after_step();
}

int64_t EmbeddingTracker::current_step() const { return state_->step; }
const std::string& EmbeddingTracker::layer() const { return state_->layer; }
const EmbeddingRows& EmbeddingTracker::rows() const { return state_->rows; }
const std::vector<std::pair<int64_t, double>>& EmbeddingTracker::gradient_norms() const {
  return state_->grad_norms;
}
const std::vector<int64_t>& EmbeddingTracker::touched_rows() const { return state_->touched; }
std::vector<std::string> EmbeddingTracker::warnings() const { return state_->warnings; }

EmbeddingReport EmbeddingTracker::report() const {
  EmbeddingRuleOptions rules;
  rules.thresholds = state_->options.thresholds;
  rules.zombie_rule = state_->options.zombie_rule;
  rules.negative_sampler = state_->options.negative_sampler;
  return report(rules);
}

EmbeddingReport EmbeddingTracker::report(const EmbeddingRuleOptions& rules) const {
  const State& s = *state_;
  s.check_weight();
  // Effective rank of up to rank_sample_rows exposed rows, taken evenly by row id.
  std::vector<int64_t> exposed;
  for (int64_t r = 0; r < s.rows.rows(); ++r)
    if (s.rows.exposure(r) > 0) exposed.push_back(r);
  std::vector<double> sv;
  int64_t sampled = 0;
  if (exposed.size() >= 2 && s.options.rank_sample_rows > 0) {
    const auto n = static_cast<int64_t>(exposed.size());
    const int64_t m = std::min<int64_t>(n, s.options.rank_sample_rows);
    std::vector<int64_t> pick(m);
    for (int64_t i = 0; i < m; ++i) pick[i] = exposed[i * n / m];
    at::NoGradGuard no_grad;
    const at::Tensor idx = at::from_blob(pick.data(), {m}, at::kLong).clone();
    const at::Tensor sig = at::linalg_svdvals(gather(s.weight, idx).to(at::kDouble)).contiguous();
    sv.assign(sig.data_ptr<double>(), sig.data_ptr<double>() + sig.numel());
    sampled = m;
  }
  return diagnose_embedding(s.layer, s.rows, s.step, rules, sv, sampled);
}

}  // namespace gradscope::torch
