// What the ATen statistics tests expect of two Stats of the same data (docs/devices.md):
// counts, min, max and max |x| exact; sums within 2 n u of the sum of magnitudes (u = 2^-53),
// the worst case of two double summations in different orders.
#pragma once

#include <ATen/core/Tensor.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

#include "aten_stats.h"  // src/torch, internal
#include "gradscope/core/stats/stats.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch::test {

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kU = 0x1p-53;  // unit roundoff of double

/// `got` agrees with `want` (the fused kernel's, or another order of the same sums) field by field.
inline void expect_agree(const Stats& want, const Stats& got) {
  EXPECT_EQ(got.count, want.count);
  EXPECT_EQ(got.finite, want.finite);
  EXPECT_EQ(got.nan, want.nan);
  EXPECT_EQ(got.pos_inf, want.pos_inf);
  EXPECT_EQ(got.neg_inf, want.neg_inf);
  EXPECT_EQ(got.zero, want.zero);
  EXPECT_EQ(got.saturated, want.saturated);
  EXPECT_EQ(got.min, want.min);
  EXPECT_EQ(got.max, want.max);
  EXPECT_EQ(got.max_abs, want.max_abs);
  const double n = static_cast<double>(want.finite);
  EXPECT_NEAR(got.sum, want.sum, 2 * n * kU * want.sum_abs);
  EXPECT_NEAR(got.sum_sq, want.sum_sq, 2 * n * kU * want.sum_sq);
  EXPECT_NEAR(got.sum_abs, want.sum_abs, 2 * n * kU * want.sum_abs);
}

/// The fused kernel and the ATen path agree on `t`.
inline void expect_paths_agree(const at::Tensor& t, const StatsOptions& o = {}) {
  SCOPED_TRACE(std::string(c10::toString(t.scalar_type())) + " " + shape_of(t));
  expect_agree(compute(view_of(t, "t"), o), internal::aten_stats(t, "t", o));
}

/// Sets the switch for one scope and restores it: the suite also runs with the whole program
/// forced (GRADSCOPE_FORCE_ATEN_STATS=1), and these tests need both paths.
class ForceAten {
 public:
  explicit ForceAten(bool on) : was_(internal::aten_stats_forced()) { internal::force_aten_stats(on); }
  ~ForceAten() { internal::force_aten_stats(was_); }
  ForceAten(const ForceAten&) = delete;
  ForceAten& operator=(const ForceAten&) = delete;

 private:
  bool was_;
};

}  // namespace gradscope::torch::test
