// Field-by-field equality of two reports (doubles bit for bit, NaN equal to NaN), for tests
// that build one report two ways.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "gradscope/core/audit/report.h"

namespace gradscope::test {

inline bool same_double(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

/// `snr_tolerance`: relative, for a gradient SNR computed apart with other rounding.
inline void expect_same_report(const Report& a, const Report& b, double snr_tolerance = 0) {
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.nonfinite_origin.step, b.nonfinite_origin.step);
  EXPECT_EQ(a.nonfinite_origin.node, b.nonfinite_origin.node);
  EXPECT_EQ(a.nonfinite_origin.phase, b.nonfinite_origin.phase);
  EXPECT_EQ(a.nonfinite_origin.site, b.nonfinite_origin.site);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const NodeReport& x = a.nodes[i];
    const NodeReport& y = b.nodes[i];
    SCOPED_TRACE("node " + x.node);
    EXPECT_EQ(x.node, y.node);
    EXPECT_EQ(x.steps, y.steps);
    EXPECT_EQ(x.first_step, y.first_step);
    EXPECT_EQ(x.last_step, y.last_step);
    const double xs[] = {x.act_mean_abs, x.act_std, x.out_grad_l2, x.param_grad_l2, x.param_l2,
                         x.grad_param_ratio, x.update_ratio, x.effective_rank};
    const double ys[] = {y.act_mean_abs, y.act_std, y.out_grad_l2, y.param_grad_l2, y.param_l2,
                         y.grad_param_ratio, y.update_ratio, y.effective_rank};
    for (std::size_t k = 0; k < std::size(xs); ++k)
      EXPECT_TRUE(same_double(xs[k], ys[k])) << "measure " << k << ": " << xs[k] << " vs " << ys[k];
    if (snr_tolerance > 0 && std::isfinite(x.grad_snr))
      EXPECT_NEAR(x.grad_snr, y.grad_snr, snr_tolerance * std::fabs(y.grad_snr));
    else
      EXPECT_TRUE(same_double(x.grad_snr, y.grad_snr)) << x.grad_snr << " vs " << y.grad_snr;
    EXPECT_EQ(x.channels, y.channels);
    EXPECT_EQ(x.dead_channels, y.dead_channels);
    EXPECT_EQ(x.ignored_channels, y.ignored_channels);
    EXPECT_EQ(x.nan, y.nan);
    EXPECT_EQ(x.inf, y.inf);
    EXPECT_EQ(x.flags_label(), y.flags_label());
    ASSERT_EQ(x.evidence.size(), y.evidence.size());
    for (std::size_t e = 0; e < x.evidence.size(); ++e) {
      EXPECT_EQ(x.evidence[e].flag, y.evidence[e].flag);
      EXPECT_EQ(x.evidence[e].site, y.evidence[e].site);
      EXPECT_EQ(x.evidence[e].first_step, y.evidence[e].first_step);
      EXPECT_TRUE(same_double(x.evidence[e].value, y.evidence[e].value));
      EXPECT_TRUE(same_double(x.evidence[e].threshold, y.evidence[e].threshold));
      EXPECT_EQ(x.evidence[e].measure, y.evidence[e].measure);
      EXPECT_EQ(x.evidence[e].detail, y.evidence[e].detail);
    }
  }
}

}  // namespace gradscope::test
