// The measured maximum-loss search (core/compress/search.h) on a LibTorch model: each candidate
// recipe is applied to the model's weights, the caller's validation function measures it, and
// the weights are restored, so the model leaves the search as it came in.
//
//   auto val_accuracy = [&] { return accuracy(*net, x_val, y_val); };  // the user's held-out set
//   MeasuredSearch s = gradscope::compress::search_max_loss(*net, nodes, /*max_loss=*/0.01, val_accuracy);
//   gradscope::compress::apply(*net, s.recipe);  // at most 0.01 accuracy lost on x_val
#pragma once

#include <torch/nn/module.h>

#include <functional>
#include <vector>

#include "gradscope/core/compress/search.h"

namespace gradscope::compress {

/// Which way the validation function points: accuracy (loss = FP32 value - value) or a loss
/// (loss = value - FP32 value).
enum class Metric { kAccuracy, kLoss };

/// The smallest recipe for `model` whose measured loss on the caller's validation function is
/// <= max_loss (core/compress/search.h). The reference is `evaluate()` on the model as given
/// (called once, after the bound is checked). Every probe applies a recipe, evaluates and
/// restores every parameter, also when evaluate throws. Errors as the core search's and apply's.
MeasuredSearch search_max_loss(::torch::nn::Module& model, const std::vector<NodeProfile>& profiles, double max_loss,
                               const std::function<double()>& evaluate, Metric metric = Metric::kAccuracy,
                               const SearchOptions& options = {});

}  // namespace gradscope::compress
