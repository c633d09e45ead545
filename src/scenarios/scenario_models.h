// The scenario models, one factory each (controls.cpp, pathologies.cpp).
#pragma once

#include <memory>

#include "scenario.h"

namespace gradscope::scenarios {

std::shared_ptr<ScenarioModel> healthy_mlp();
std::shared_ptr<ScenarioModel> small_cnn();
std::shared_ptr<ScenarioModel> residual_mlp();

std::shared_ptr<ScenarioModel> vanishing_trunk();
std::shared_ptr<ScenarioModel> exploding_layer();
std::shared_ptr<ScenarioModel> nan_later();
std::shared_ptr<ScenarioModel> dying_relu();
std::shared_ptr<ScenarioModel> saturated_tanh();
std::shared_ptr<ScenarioModel> starved_branch();
std::shared_ptr<ScenarioModel> frozen_layer();
std::shared_ptr<ScenarioModel> dead_third();
std::shared_ptr<ScenarioModel> leaky_branches();

/// The step at which nan_later() plants its NaN.
inline constexpr int64_t kNaNStep = 20;

}  // namespace gradscope::scenarios
