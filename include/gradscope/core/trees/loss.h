// The loss a boosted model is judged by per round (dynamics.h): its objective's usual
// evaluation metric, computed in double from raw scores (margins). XGBoost's evaluation log
// computes it from float32 probabilities, which differ once a margin passes ~17 (docs/trees.md).
//
//   gradscope::TreeLoss loss = gradscope::tree_loss_of(model);   // kLogLoss for binary:logistic
//   gradscope::check_tree_labels(model, loss, data, "data");     // throws for label 3 in logloss
//   double l = gradscope::row_loss(model, loss, raw.data(), y);  // one row's loss
//   double mean = gradscope::finish_loss(loss, sum, rows);       // rmse takes the square root
#pragma once

#include <cstddef>
#include <string>

#include "gradscope/core/trees/data.h"
#include "gradscope/core/trees/model.h"

namespace gradscope {

/// Metrics gradscope computes. kNone: the objective has none of these (ranking, Poisson,
/// quantile, one-vs-all), so the loss rules say they did not judge.
enum class TreeLoss : uint8_t { kNone, kLogLoss, kMLogLoss, kRmse };

/// "logloss", "mlogloss", "rmse" ("" for kNone).
const char* tree_loss_name(TreeLoss loss);

/// The metric of the model's objective: logloss for a sigmoid link with one output (and
/// XGBoost binary:logitraw), mlogloss for softmax, rmse for squared-error regression
/// (reg:squarederror, regression / l2, RMSE), else kNone.
TreeLoss tree_loss_of(const TreeEnsemble& model);

/// Throws Error "<what>: row N: label x ..." when a label is not one the metric takes: 0 or 1
/// for logloss, an integer class in [0, outputs) for mlogloss, finite for rmse.
void check_tree_labels(const TreeEnsemble& model, TreeLoss loss, const TreeData& data,
                       const std::string& what);

/// One row's loss from its raw scores (num_outputs of them): -log p of the true class, p the
/// sigmoid (times LightGBM's sigmoid parameter) or softmax of the margins in double, clipped to
/// [1e-16, 1 - 1e-16] as XGBoost's metrics clip it; the squared error for rmse.
double row_loss(const TreeEnsemble& model, TreeLoss loss, const double* raw, double label);

/// The metric over rows from the sum of row_loss: the mean, its square root for rmse.
double finish_loss(TreeLoss loss, double sum, std::size_t rows);

}  // namespace gradscope
