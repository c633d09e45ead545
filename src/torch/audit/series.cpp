// Audit: the per-step scalars (core/series): the loss and the global gradient norms before
// and after clipping, kept at every step and handed over with the next sampled step.
#include <ATen/Functions.h>
#include <ATen/core/Tensor.h>
#include <ATen/core/grad_mode.h>
#include <c10/core/ScalarType.h>
#include <torch/nn/utils/clip_grad.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "audit/state.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {

namespace {

// Adds `value` of series `name` at `step` unless the step has one already (the first stays).
void add_scalar(std::vector<StepScalar>& scalars, int64_t step, const char* name, double value) {
  for (auto it = scalars.rbegin(); it != scalars.rend() && it->step == step; ++it)
    if (it->name == name) return;
  scalars.push_back({step, name, value});
}

}  // namespace

void Audit::record_loss(double loss) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  add_scalar(s.current.scalars, s.step, kLossSeries, loss);
}

void Audit::record_scalar(const std::string& name, double value) {
  if (name.empty() || name.size() > 256)
    throw Error("audit: record_scalar: a series name must have 1 to 256 bytes, got " + std::to_string(name.size()));
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  add_scalar(s.current.scalars, s.step, name.c_str(), value);
}

void Audit::record_grad_norm(double before_clip, double applied) {
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  add_scalar(s.current.scalars, s.step, kGradNormSeries, before_clip);
  if (!std::isnan(applied)) add_scalar(s.current.scalars, s.step, kClippedGradNormSeries, applied);
}

double Audit::clip_grad_norm(double max_norm) {
  if (!(std::isfinite(max_norm) && max_norm > 0))
    throw Error("audit: clip_grad_norm: max_norm must be finite and > 0, got " + std::to_string(max_norm));
  std::vector<at::Tensor> params;
  for (const State::Param& p : state_->params)
    if (p.tensor.grad().defined()) params.push_back(p.tensor);
  const double before = ::torch::nn::utils::clip_grad_norm_(params, max_norm);
  // The factor clip_grad_norm_ applies: max_norm / (norm + 1e-6) when below 1.
  const double factor = max_norm / (before + 1e-6);
  record_grad_norm(before, factor < 1 ? before * factor : before);
  return before;
}

namespace {
// The double copy of the output logits that record_output_logits holds at once, at most (one
// row is the floor when it alone is larger).
constexpr int64_t kOutputLogitChunkBytes = int64_t{32} << 20;
}  // namespace

void Audit::record_output_logits(const at::Tensor& logits) {
  if (!logits.defined() || !at::isFloatingType(logits.scalar_type()) || logits.dim() < 1 || logits.numel() == 0)
    throw Error("audit: record_output_logits: the output logits must be a non-empty floating-point tensor [..., "
                "vocabulary], got " + (logits.defined() ? std::string(c10::toString(logits.scalar_type())) + shape_of(logits)
                                                          : std::string("an undefined tensor")));
  // Sampled as attention is (the reduction reads every logit); an evaluation pass under
  // torch::NoGradGuard is not training.
  if (!attention_step() || !at::GradMode::is_enabled()) return;
  const at::Tensor x = logits.detach().to(at::kFloat);
  // Means in double: a float32 sum of large logits overflows (8 logits of 1e38 sum to Inf) long
  // before their mean does. logsumexp works row by row around the row's largest logit, so its
  // rows stay finite in float; the logits themselves reach double a bounded chunk of rows at a
  // time, so the extra memory does not grow with the batch.
  const at::Tensor rows = x.reshape({-1, x.size(-1)});
  const double log_z = at::logsumexp(rows, {-1}).to(at::kDouble).mean().item<double>();
  const int64_t chunk = std::max<int64_t>(1, kOutputLogitChunkBytes / (rows.size(1) * int64_t{sizeof(double)}));
  at::Tensor total = at::zeros({}, rows.options().dtype(at::kDouble));
  for (int64_t first = 0; first < rows.size(0); first += chunk)
    total += rows.narrow(0, first, std::min(chunk, rows.size(0) - first)).to(at::kDouble).sum();
  const double mean = total.item<double>() / static_cast<double>(rows.numel());
  State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  add_scalar(s.current.scalars, s.step, kLogZSeries, log_z);
  add_scalar(s.current.scalars, s.step, kLogitMeanSeries, mean);
}

}  // namespace gradscope::torch
