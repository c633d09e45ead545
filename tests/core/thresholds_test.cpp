#include "gradscope/core/vocabulary/thresholds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

TEST(Thresholds, DefaultsAreTheDesignValues) {
  const Thresholds t;
  EXPECT_EQ(t.grad_lo, 1e-7);
  EXPECT_EQ(t.grad_hi, 1e3);
  EXPECT_EQ(t.activation_saturation, 50);
  EXPECT_EQ(t.saturation_frac, 0.5);
  EXPECT_EQ(t.dead_eps, 1e-7);
  EXPECT_EQ(t.dead_frac, 0.95);
  EXPECT_EQ(t.zombie_min_exposure, 5);
  EXPECT_EQ(t.zombie_oscillation, -0.3);
  EXPECT_EQ(t.zombie_velocity_ratio, 0.5);
  EXPECT_EQ(t.velocity_ema, 0.9);
  EXPECT_EQ(t.oscillation_ema, 0.8);
  EXPECT_EQ(t.flow_critical_ratio, 0.5);
  EXPECT_EQ(t.flow_problems_ratio, 0.3);
  EXPECT_EQ(t.flow_minor_ratio, 0.1);
  EXPECT_NO_THROW(t.validate());
}

TEST(Thresholds, StatsOptionsCarryZeroAndSaturation) {
  Thresholds t;
  t.dead_eps = 1e-5;
  t.activation_saturation = 6;
  const StatsOptions o = t.stats_options(4);
  EXPECT_EQ(o.dead_eps, 1e-5);
  EXPECT_EQ(o.saturation, 6);
  EXPECT_EQ(o.threads, 4);
}

TEST(Thresholds, NonsenseIsRejectedByName) {
  auto message = [](Thresholds t) {
    try {
      t.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("valid");
  };
  Thresholds t;
  t.grad_lo = std::nan("");
  EXPECT_THAT(message(t), ::testing::HasSubstr("threshold grad_lo"));
  t = {};
  t.grad_lo = 10;
  t.grad_hi = 1;
  EXPECT_THAT(message(t), ::testing::HasSubstr("must be below grad_hi"));
  t = {};
  t.dead_frac = 1.5;
  EXPECT_THAT(message(t), ::testing::HasSubstr("threshold dead_frac"));
  t = {};
  t.dead_eps = -1;
  EXPECT_THAT(message(t), ::testing::HasSubstr("threshold dead_eps"));
  t = {};
  t.flow_minor_ratio = 0.4;
  EXPECT_THAT(message(t), ::testing::HasSubstr("flow_problems_ratio"));
}

}  // namespace
}  // namespace gradscope
