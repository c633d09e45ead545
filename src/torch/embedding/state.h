// EmbeddingTracker's state, shared by its source files: tracker.cpp (attach, observe,
// report), step.cpp (the tracked step) and fix.cpp (auto-fix).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/nn/modules/embedding.h>

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "embedding/batch.h"
#include "embedding/ranks.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/embedding/tracker.h"

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
  std::vector<int64_t> observed;   // indices seen this step (with duplicates), all roles
  std::vector<int64_t> negatives;  // those of them observed as Role::kNegative
  TouchedRows touched;             // this step's rows, ascending, with their counts
  // Buffers of the tracked step, kept between steps so that a step allocates nothing:
  std::vector<const float*> grad_rows;  // row k's gradient (dim floats), empty if undefined
  at::Tensor grad_keep;                 // what grad_rows point into when not the gradient itself
  std::vector<float> grad_sums;         // rows repeated in a sparse gradient, summed
  std::vector<float> zero_row;          // dim zeros: a touched row the gradient lacks
  std::vector<float> before;            // T x dim: the rows before the optimizer step
  std::vector<double> before_norm;      // their L2 norms
  std::vector<float> delta;             // one row's update (T x dim when on_step is set)
  std::unique_ptr<EmbeddingRankMerge> ranks;  // with options.process_group (a lone step() merges)
  RanksTable ranks_part;                      // this table's part of a merge, lone or in a hub
  bool ranks_differ = false;                  // gradients differed across ranks (warned once)
  bool in_step = false;
  bool tracking = false;
  std::vector<std::pair<int64_t, double>> grad_norms;
  std::vector<std::string> warnings;

  State(std::string l, EmbeddingTrackerOptions o, std::shared_ptr<::torch::nn::Module> m,
        at::Tensor w)
      : layer(std::move(l)), options(std::move(o)), module(std::move(m)), weight(std::move(w)),
        rows(weight.size(0), weight.size(1),
             EmbeddingRowsOptions{options.thresholds.velocity_ema,
                                  options.thresholds.oscillation_ema, options.gradient_ema,
                                  options.thresholds.update_ratio_lo,
                                  options.thresholds.zombie_window}),
        zero_row(static_cast<std::size_t>(weight.size(1)), 0.f) {}

  std::string who() const { return "embedding '" + layer + "': "; }
  void warn(const std::string& w) {
    if (std::find(warnings.begin(), warnings.end(), w) == warnings.end()) warnings.push_back(w);
  }
  void check_weight() const;
  void check_gradient(const at::Tensor& grad) const;
  at::Tensor checked_indices(const at::Tensor& indices) const;
  Error forward_error(const at::Tensor& indices, const c10::Error& e) const;
  /// The touched rows as an int64 tensor (for LibTorch's gathers on the slow paths).
  at::Tensor touched_tensor() const;
  /// Points grad_rows at each touched row's gradient in `grad` (empty when undefined).
  void locate_gradients(const at::Tensor& grad);
  /// The tracked step's first part, up to the merge across ranks: checks, then the touched
  /// rows. Starts the step (in_step); returns whether it is tracked.
  bool begin_step();
  /// Fills ranks_part with this rank's touched rows and their gradient hashes (before a merge).
  void prepare_merge();
  /// After a merge: warns once when the ranks' gradients differed.
  void merged();
  /// The tracked step's rest, on the (merged) touched rows: counts, snapshots, gradients.
  void finish_before_step();
  /// Auto-fix (options.auto_fix): scales the gradient of touched zombie rows, boosts
  /// under-trained ones if asked, and reports each act to options.on_intervention.
  void auto_fix(at::Tensor grad);
};

/// Rows of `w` at `idx` as a contiguous float32 [T, dim] copy.
at::Tensor gather(const at::Tensor& w, const at::Tensor& idx);

/// Median of `v` (0 when empty).
double median_of(std::vector<double> v);

}  // namespace gradscope::torch
