// EmbeddingTracker: attach, observe and report; the tracked step is in step.cpp.
#include "gradscope/torch/embedding/tracker.h"

#include <ATen/Functions.h>
#include <ATen/core/grad_mode.h>

#include <algorithm>

#include "embedding/state.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {

namespace {
// A weight the tracker can read: a defined 2-D floating-point tensor on the CPU. Its row
// statistics and per-row state (exposure, velocity, oscillation) are host loops over gathered
// rows, so a device table would need them on the device too: refused, not copied to the host.
void check_readable(const at::Tensor& w, const std::string& who) {
  if (!w.defined() || w.dim() != 2) throw Error(who + "weight must be 2-D");
  if (!w.device().is_cpu())
    throw Error(who + "weight on device " + w.device().str() +
                ": the embedding tracker keeps its per-row state on the CPU and reads rows there; "
                "tables on other devices are not supported yet (docs/devices.md)");
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

}  // namespace

at::Tensor gather(const at::Tensor& w, const at::Tensor& idx) {
  return w.index_select(0, idx).to(at::kFloat).contiguous();
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}

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
    throw Error(who() + "gradient on device " + grad.device().str() +
                ": the embedding tracker reads rows on the CPU only; "
                "tables on other devices are not supported yet (docs/devices.md)");
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
  if (state_->options.process_group) {
    state_->ranks = std::make_unique<EmbeddingRankMerge>(state_->options.process_group);
    state_->ranks->check_table("embedding '" + state_->layer + "'", w.size(0), w.size(1));
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
const std::vector<int64_t>& EmbeddingTracker::touched_rows() const {
  return state_->touched.rows();
}
std::vector<std::string> EmbeddingTracker::warnings() const {
  const State& s = *state_;
  std::vector<std::string> w = s.warnings;
  // Verdicts report() cannot reach with the tracker's own options, said here so that their
  // absence is not read as a clean bill of health.
  const int64_t tracked = (s.step + s.options.track_every - 1) / s.options.track_every;
  // The fewest updates a row is judged on: two short windows (rows.h).
  const int shortest = zombie_short_window(s.options.thresholds.zombie_window);
  const int64_t needed = 2 * static_cast<int64_t>(shortest) + 1;
  if (s.options.zombie_rule == ZombieRule::kWindowed && tracked > 0 && tracked < needed)
    w.push_back(s.who() + "ZOMBIE_ROWS needs " + std::to_string(needed) + " real updates of a row (two windows of " +
                std::to_string(shortest) + " cosines, zombie_window " +
                std::to_string(s.options.thresholds.zombie_window) + " / 8) and " + std::to_string(tracked) +
                " steps were tracked: no row can be judged, ZOMBIE_ROWS is not judged yet");
  if (s.options.negative_sampler.kind == NegativeSampler::Kind::kPopularity) {
    uint64_t negatives = 0;
    bool positives = false;
    for (int64_t r = 0; r < s.rows.rows(); ++r) {
      negatives += s.rows.negatives(r);
      positives = positives || s.rows.lookups(r) > s.rows.negatives(r);
    }
    if (negatives > 0 && !positives)
      w.push_back(s.who() + std::to_string(negatives) +
                  " negatives marked and no other lookups: the popularity sampler declared has "
                  "no popularity to follow, so NEGATIVE_SAMPLER_SKEW is not judged (against a "
                  "uniform sampler it would be)");
  }
  return w;
}

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
