// Raw scores of every row of one data set after the trees added so far, kept
// exactly as predict_raw sums them: XGBoost in float32 from the base margin,
// tree by tree; LightGBM and CatBoost in double, scaled, averaged (random
// forests) and offset at the end. Shared by the pass over the rows
// (data_pass.cpp) and the test of a validation rise (rise_confidence.cpp), which both
// need the loss of a prefix of rounds without predicting it again.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "gradscope/core/trees/dynamics.h"

namespace gradscope::tree_internal {

class RunningScores {
public:
  RunningScores(const TreeEnsemble &model, const TreeData &data)
      : m_(model), data_(data), k_(static_cast<std::size_t>(model.num_outputs)),
        sum_(data.rows * k_), raw_(k_) {
    if (xgboost())
      for (std::size_t i = 0; i < data.rows; ++i)
        for (std::size_t c = 0; c < k_; ++c)
          sum_[i * k_ + c] = static_cast<float>(model.base_score[c]);
  }

  void add(std::size_t row, int32_t output, double out) {
    double &s = sum_[row * k_ + static_cast<std::size_t>(output)];
    if (xgboost())
      s = static_cast<float>(s) + static_cast<float>(out);
    else
      s += out;
  }

  // The metric of the model made of the first `rounds` rounds; per-row losses
  // into `rows`.
  double loss(TreeLoss loss, int32_t rounds, Stats *rows) {
    losses_.resize(data_.rows);
    double sum = 0;
    for (std::size_t i = 0; i < data_.rows; ++i)
      sum += losses_[i] = row_loss(m_, loss, raw_of(i, rounds), data_.y[i]);
    if (rows)
      *rows = compute(
          TensorView::contiguous(losses_.data(), DType::kFloat64,
                                 {static_cast<int64_t>(losses_.size())}));
    return finish_loss(loss, sum, data_.rows);
  }

  /// The per-row losses of the last loss() call.
  const std::vector<double> &losses() const { return losses_; }

  /// Rows whose predicted class is not their label after `rounds` rounds: the
  /// margin's sign against a label >= 0.5 (logloss), the largest margin against
  /// the class (mlogloss); -1 for a metric without classes (rmse).
  int64_t errors(TreeLoss loss, int32_t rounds) {
    if (loss != TreeLoss::kLogLoss && loss != TreeLoss::kMLogLoss)
      return -1;
    int64_t wrong = 0;
    for (std::size_t i = 0; i < data_.rows; ++i) {
      const double *raw = raw_of(i, rounds);
      const double y = data_.y[i];
      if (loss == TreeLoss::kLogLoss)
        wrong += (raw[0] > 0) != (y >= 0.5);
      else
        wrong +=
            static_cast<double>(std::max_element(raw, raw + k_) - raw) != y;
    }
    return wrong;
  }

private:
  bool xgboost() const { return m_.dialect == TreeDialect::kXGBoost; }

  // Row i's raw scores as the model of `rounds` rounds outputs them (in raw_).
  const double *raw_of(std::size_t i, int32_t rounds) {
    for (std::size_t c = 0; c < k_; ++c) {
      double v = sum_[i * k_ + c];
      if (!xgboost()) {
        if (m_.average_output && rounds > 0)
          v /= rounds;
        v = v * m_.scale + m_.base_score[c];
      }
      raw_[c] = v;
    }
    return raw_.data();
  }

  const TreeEnsemble &m_;
  const TreeData &data_;
  std::size_t k_;
  std::vector<double> sum_, raw_, losses_;
};

} // namespace gradscope::tree_internal
