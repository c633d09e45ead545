#include "gradscope/core/trees/thresholds.h"

#include <cmath>
#include <string>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

void require(bool ok, const char* name, double value, const char* rule) {
  if (!ok)
    throw Error(std::string("tree threshold ") + name + " = " + std::to_string(value) + ": " +
                rule);
}

}  // namespace

void TreeThresholds::validate() const {
  // A million rounds per window is already more than any model holds.
  require(window >= 0 && window <= 1000000, "window", window,
          "must be in [0, 1000000] (0: automatic)");
  require(stall_loss_drop >= 0 && stall_loss_drop <= 1, "stall_loss_drop", stall_loss_drop,
          "must be in [0, 1]");
  require(stagnant_fraction >= 0 && stagnant_fraction < 1, "stagnant_fraction", stagnant_fraction,
          "must be in [0, 1)");
  require(stagnant_rounds >= 1, "stagnant_rounds", stagnant_rounds, "must be >= 1");
  require(std::isfinite(overfit_rise) && overfit_rise >= 0, "overfit_rise", overfit_rise,
          "must be finite and >= 0");
  require(std::isfinite(overfit_z) && overfit_z >= 0, "overfit_z", overfit_z,
          "must be finite and >= 0");
  require(std::isfinite(overfit_large_rise) && overfit_large_rise >= 0, "overfit_large_rise",
          overfit_large_rise, "must be finite and >= 0");
  require(overfit_rounds >= 1, "overfit_rounds", overfit_rounds, "must be >= 1");
  require(std::isfinite(exploding_growth) && exploding_growth > 1, "exploding_growth",
          exploding_growth, "must be finite and > 1");
  require(concentrated_share > 0 && concentrated_share < 1, "concentrated_share",
          concentrated_share, "must be in (0, 1)");
  require(interaction_vif >= 1, "interaction_vif", interaction_vif,
          "must be >= 1 (a VIF is never below 1)");
  require(max_interactions >= 0 && max_interactions <= 10000, "max_interactions", max_interactions,
          "must be in [0, 10000]");
}

}  // namespace gradscope
