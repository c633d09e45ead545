// Objectives by name, as LightGBM and CatBoost write them, to the link that turns raw scores
// into what their predict() returns.
#pragma once

#include <string>
#include <string_view>

#include "gradscope/core/trees/model.h"

namespace gradscope::trees_internal {

struct LightGBMObjective {
  std::string name;  ///< the first word ("binary")
  TreeLink link = TreeLink::kIdentity;
  double sigmoid = 1;  ///< "sigmoid:<x>"
};

/// LightGBM's "objective=binary sigmoid:1" value (ObjectiveFunction::ConvertOutput of each
/// objective in src/objective/): binary, cross_entropy -> sigmoid; multiclass -> softmax;
/// multiclassova -> sigmoid per class; cross_entropy_lambda -> log(1 + exp); poisson, gamma,
/// tweedie -> exp; regression, quantile, ranking and others -> identity.
LightGBMObjective lightgbm_objective(std::string_view value);

/// CatBoost's loss_function type: Logloss, CrossEntropy, MultiClassOneVsAll -> sigmoid;
/// MultiClass -> softmax; Poisson, Tweedie -> exp; RMSE, Quantile, MAE and others -> identity.
TreeLink catboost_link(const std::string& loss);

}  // namespace gradscope::trees_internal
