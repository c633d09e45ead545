// Channel-level measures on activations: per-channel summaries, effective rank, linear CKA.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "gradscope/core/stats/stats.h"

namespace gradscope::torch::internal {

/// One Stats per index of `dim`, over every other dimension.
std::vector<Stats> per_channel_stats(const at::Tensor& x, int64_t dim, const StatsOptions& options);

/// exp(entropy of the normalised singular values) of x as [samples, channels along dim]
/// (Roy & Vetterli 2007): 1 when all samples lie on a line, up to min(samples, channels).
double effective_rank(const at::Tensor& x, int64_t dim);

/// effective_rank() from the Gram matrix of the [samples, channels] matrix (either one: m m^T
/// or m^T m, or a sum of per-shard m_r^T m_r); NaN when it is all zero or empty.
double effective_rank_of_gram(const at::Tensor& gram);

/// Linear CKA (Kornblith et al. 2019) between two activations with the same first dimension
/// (samples); every other dimension is flattened into features. 1 = same information up to
/// rotation and scale; NaN when either is constant.
double linear_cka(const at::Tensor& x, const at::Tensor& y);

}  // namespace gradscope::torch::internal
