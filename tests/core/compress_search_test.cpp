// The measured maximum-loss search (core/compress/search.h) against a measurement the test
// controls: the returned recipe is within the bound and the next smaller probe is not, a bound of 0
// keeps every measured loss at 0, the smallest size is reported when it passes, and bad bounds or
// measurements are refused.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "../common/error_of.h"
#include "gradscope/core/compress/search.h"

namespace gradscope::compress {
namespace {

using ::testing::HasSubstr;
using test::error_of;

NodeProfile node(const std::string& name, int64_t units, int64_t inputs) {
  NodeProfile p;
  p.node = name;
  p.weight_shape = {units, inputs};
  p.bias = units;
  p.batch = 4;
  p.grad_sq = 1.0;
  p.param_elements = units * inputs + units;
  p.steps = 10;
  p.max_abs.assign(units, 1.0);
  p.weight_sq.assign(units, 1.0);
  p.act_sq.assign(units, 1.0);
  p.out_grad_sq.assign(units, 1.0);
  p.zero_frac.assign(units, 0.0);
  return p;
}

std::vector<NodeProfile> chain() {
  std::vector<NodeProfile> p = {node("fc1", 16, 16), node("fc2", 4, 16)};
  p[0].next = "fc2";
  p[0].next_fan = 1;
  return p;
}

// A loss that falls as the recipe grows: the share of FP32's bytes removed.
double shrinkage(const Recipe& r) { return 1.0 - static_cast<double>(r.bytes) / static_cast<double>(r.fp32_bytes); }

TEST(CompressSearch, ReturnsTheSmallestRecipeWithinTheBoundAndTheFailingProbeBelowIt) {
  const auto profiles = chain();
  int calls = 0;
  const MeasuredSearch s = search_max_loss(profiles, 0.5, [&](const Recipe& r) {
    ++calls;
    return shrinkage(r);
  });
  EXPECT_FALSE(s.reached_smallest);
  EXPECT_LE(s.loss, 0.5);
  EXPECT_DOUBLE_EQ(s.loss, shrinkage(s.recipe));
  EXPECT_GT(s.next_smaller.loss, 0.5);
  EXPECT_LT(s.next_smaller.bytes, s.recipe.bytes);
  // Bisection ends with the failing budget within the tolerance of the passing one.
  const int64_t range = s.recipe.fp32_bytes - smallest_bytes(profiles);
  EXPECT_LE(s.recipe.budget_bytes - s.next_smaller.budget_bytes, std::max<int64_t>(1, range / 256));
  // Close to the bound: about half of FP32's bytes.
  EXPECT_NEAR(s.recipe.bytes, s.recipe.fp32_bytes / 2, s.recipe.fp32_bytes / 20);
  EXPECT_LE(calls, SearchOptions{}.max_probes);
  EXPECT_GE(static_cast<int>(s.probes.size()), calls);  // repeated recipes are probes, not measurements
}

TEST(CompressSearch, BoundZeroReturnsARecipeWithNoMeasuredLoss) {
  // Loss 0 down to 60% of FP32's bytes, then positive: the search stops above that edge.
  const MeasuredSearch s = search_max_loss(chain(), 0.0, [](const Recipe& r) { return std::max(0.0, shrinkage(r) - 0.4); });
  EXPECT_EQ(s.loss, 0.0);
  EXPECT_GE(s.recipe.bytes, 0.6 * s.recipe.fp32_bytes);
  EXPECT_GT(s.next_smaller.loss, 0.0);
  // A measurement that is positive everywhere below FP32 returns FP32 itself.
  const MeasuredSearch all = search_max_loss(chain(), 0.0, [](const Recipe& r) { return shrinkage(r); });
  EXPECT_EQ(all.recipe.bytes, all.recipe.fp32_bytes);
  EXPECT_EQ(all.loss, 0.0);
}

TEST(CompressSearch, SaysWhenTheSmallestSizePasses) {
  const auto profiles = chain();
  const MeasuredSearch s = search_max_loss(profiles, 1.0, shrinkage);
  EXPECT_TRUE(s.reached_smallest);
  EXPECT_EQ(s.recipe.bytes, smallest_bytes(profiles));
  EXPECT_EQ(s.probes.size(), 1u);
  EXPECT_EQ(s.next_smaller.budget_bytes, 0);
}

TEST(CompressSearch, MeasuresEachDistinctRecipeOnceAndStopsAtMaxProbes) {
  SearchOptions o;
  o.max_probes = 4;
  o.tolerance_bytes = 1;
  int calls = 0;
  const MeasuredSearch s = search_max_loss(chain(), 0.5, [&](const Recipe& r) {
    ++calls;
    return shrinkage(r);
  }, o);
  EXPECT_LE(calls, 4);
  EXPECT_LE(s.loss, 0.5);
  EXPECT_GT(s.next_smaller.loss, 0.5);
}

TEST(CompressSearch, RefusesBadBoundsAndMeasurements) {
  const auto profiles = chain();
  int calls = 0;
  const MeasureLoss counting = [&](const Recipe& r) {
    ++calls;
    return shrinkage(r);
  };
  EXPECT_THAT(error_of([&] { search_max_loss(profiles, -0.01, counting); }), HasSubstr("measured maximum loss -0.01"));
  EXPECT_THAT(error_of([&] { search_max_loss(profiles, std::nan(""), counting); }), HasSubstr("give a finite number >= 0"));
  EXPECT_THAT(error_of([&] { search_max_loss(profiles, std::numeric_limits<double>::infinity(), counting); }),
              HasSubstr("finite"));
  EXPECT_EQ(calls, 0);  // refused before anything was measured
  EXPECT_THAT(error_of([&] { search_max_loss(profiles, 0.1, [](const Recipe&) { return std::nan(""); }); }),
              HasSubstr("is NaN"));
  EXPECT_THAT(error_of([&] { search_max_loss(profiles, 0.1, [](const Recipe&) { return 0.5; }); }),
              HasSubstr("the uncompressed (FP32) recipe already measures 0.5"));
}

}  // namespace
}  // namespace gradscope::compress
