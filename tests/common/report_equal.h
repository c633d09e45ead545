// Exact equality of two reports, field by field: the saved-run report must be the audit's own,
// not merely close to it. Doubles are equal bit for bit, or both NaN.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>

#include "gradscope/core/audit/architecture.h"
#include "gradscope/core/audit/report.h"

namespace gradscope::test {

inline bool same_double(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, sizeof a) == 0;  // also tells 0.0 from -0.0
}

inline std::string show(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

/// Success, or the first field that differs, named by node.
inline ::testing::AssertionResult same_report(const Report& a, const Report& b) {
  auto differ = [](const std::string& what, const std::string& x, const std::string& y) {
    return ::testing::AssertionFailure() << what << ": " << x << " vs " << y;
  };
  if (a.steps != b.steps) return differ("steps", std::to_string(a.steps), std::to_string(b.steps));
  if (a.nodes.size() != b.nodes.size())
    return differ("node count", std::to_string(a.nodes.size()), std::to_string(b.nodes.size()));
  const NonFiniteOrigin &oa = a.nonfinite_origin, &ob = b.nonfinite_origin;
  if (oa.step != ob.step || oa.node != ob.node || oa.phase != ob.phase || oa.site != ob.site || oa.rank != ob.rank)
    return differ("nonfinite origin", std::to_string(oa.step) + " " + oa.node + " " + oa.phase + " rank " + std::to_string(oa.rank),
                  std::to_string(ob.step) + " " + ob.node + " " + ob.phase + " rank " + std::to_string(ob.rank));
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const NodeReport &x = a.nodes[i], &y = b.nodes[i];
    const std::string at = "node " + std::to_string(i) + " '" + x.node + "' ";
    if (x.node != y.node) return differ("node " + std::to_string(i), x.node, y.node);
    const int64_t ints[][2] = {{x.steps, y.steps},       {x.first_step, y.first_step},
                               {x.last_step, y.last_step}, {x.channels, y.channels},
                               {x.dead_channels, y.dead_channels}, {x.ignored_channels, y.ignored_channels},
                               {x.nan, y.nan},           {x.inf, y.inf}};
    for (const auto& v : ints)
      if (v[0] != v[1]) return differ(at + "count", std::to_string(v[0]), std::to_string(v[1]));
    const std::pair<const char*, double> doubles[][2] = {
        {{"act_mean_abs", x.act_mean_abs}, {"", y.act_mean_abs}},
        {{"act_std", x.act_std}, {"", y.act_std}},
        {{"out_grad_l2", x.out_grad_l2}, {"", y.out_grad_l2}},
        {{"param_grad_l2", x.param_grad_l2}, {"", y.param_grad_l2}},
        {{"param_l2", x.param_l2}, {"", y.param_l2}},
        {{"grad_param_ratio", x.grad_param_ratio}, {"", y.grad_param_ratio}},
        {{"update_ratio", x.update_ratio}, {"", y.update_ratio}},
        {{"grad_snr", x.grad_snr}, {"", y.grad_snr}},
        {{"effective_rank", x.effective_rank}, {"", y.effective_rank}}};
    for (const auto& d : doubles)
      if (!same_double(d[0].second, d[1].second)) return differ(at + d[0].first, show(d[0].second), show(d[1].second));
    if (!(x.flags == y.flags)) return differ(at + "flags", x.flags_label(), y.flags_label());
    if (x.evidence.size() != y.evidence.size())
      return differ(at + "evidence count", std::to_string(x.evidence.size()), std::to_string(y.evidence.size()));
    for (std::size_t e = 0; e < x.evidence.size(); ++e) {
      const Evidence &p = x.evidence[e], &q = y.evidence[e];
      const std::string ev = at + "evidence " + flag_name(p.flag) + " ";
      if (p.flag != q.flag || p.site != q.site || p.first_step != q.first_step)
        return differ(ev + "(flag, site, first step)", std::to_string(p.first_step), std::to_string(q.first_step));
      if (!same_double(p.value, q.value)) return differ(ev + "value", show(p.value), show(q.value));
      if (!same_double(p.threshold, q.threshold)) return differ(ev + "threshold", show(p.threshold), show(q.threshold));
      if (p.measure != q.measure || p.detail != q.detail) return differ(ev + "text", p.detail, q.detail);
    }
  }
  return ::testing::AssertionSuccess();
}

/// Success, or the first node that differs.
inline ::testing::AssertionResult same_architecture(const Architecture& a, const Architecture& b) {
  if (a.nodes.size() != b.nodes.size())
    return ::testing::AssertionFailure() << "node count " << a.nodes.size() << " vs " << b.nodes.size();
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    const ArchitectureNode &x = a.nodes[i], &y = b.nodes[i];
    if (x.id != y.id || x.type != y.type || x.order != y.order || x.parameters != y.parameters ||
        x.trainable != y.trainable)
      return ::testing::AssertionFailure() << "node " << i << ": " << x.id << " " << x.type << " vs " << y.id << " "
                                           << y.type;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace gradscope::test
