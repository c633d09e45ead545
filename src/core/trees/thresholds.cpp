#include "gradscope/core/trees/thresholds.h"

#include <cstdint>

namespace gradscope {

const std::vector<ThresholdField<TreeThresholds>>& tree_threshold_fields() {
  using T = TreeThresholds;
  static const std::vector<ThresholdField<T>> kFields = {
      // A million rounds per window is already more than any model holds.
      {"window", nullptr, &T::window, 0, 1000000, false, false, "must be in [0, 1000000] (0: automatic)"},
      {"stall_loss_drop", &T::stall_loss_drop, nullptr, 0, 1, false, false, "must be in [0, 1]"},
      {"stagnant_fraction", &T::stagnant_fraction, nullptr, 0, 1, false, true, "must be in [0, 1)"},
      {"stagnant_rounds", nullptr, &T::stagnant_rounds, 1, INT32_MAX, false, false, "must be >= 1"},
      {"overfit_rise", &T::overfit_rise, nullptr, 0, INFINITY, false, false, "must be finite and >= 0"},
      {"overfit_z", &T::overfit_z, nullptr, 0, INFINITY, false, false, "must be finite and >= 0"},
      {"overfit_rounds", nullptr, &T::overfit_rounds, 1, INT32_MAX, false, false, "must be >= 1"},
      {"overfit_large_rise", &T::overfit_large_rise, nullptr, 0, INFINITY, false, false, "must be finite and >= 0"},
      {"exploding_growth", &T::exploding_growth, nullptr, 1, INFINITY, true, false, "must be finite and > 1"},
      {"concentrated_share", &T::concentrated_share, nullptr, 0, 1, true, true, "must be in (0, 1)"},
      {"interaction_vif", &T::interaction_vif, nullptr, 1, INFINITY, false, false,
       "must be >= 1 (a VIF is never below 1)"},
      {"max_interactions", nullptr, &T::max_interactions, 0, 10000, false, false, "must be in [0, 10000]"},
  };
  return kFields;
}

void TreeThresholds::validate() const { validate_fields(*this, tree_threshold_fields(), "tree threshold"); }

}  // namespace gradscope
