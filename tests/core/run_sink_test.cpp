// node_values / apply_node_values: the values a saved run keeps beside the records, and back.
#include "gradscope/core/audit/run_sink.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace gradscope {
namespace {

Report report_of(std::initializer_list<std::pair<const char*, double>> snr) {
  Report r;
  for (const auto& [node, value] : snr) {
    NodeReport n;
    n.node = node;
    n.grad_snr = value;
    r.nodes.push_back(n);
  }
  return r;
}

TEST(RunSink, NodeValuesAreTheSetGradientSnrsInReportOrder) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<NodeValue> v = node_values(report_of({{"b", 0.5}, {"a", NodeReport::kNone}, {"c", inf}}));
  ASSERT_EQ(v.size(), 2u);  // a NaN SNR was never measured: nothing to keep
  EXPECT_EQ(v[0].node, "b");
  EXPECT_EQ(v[0].name, kGradSnr);
  EXPECT_EQ(v[0].value, 0.5);
  EXPECT_EQ(v[1].node, "c");
  EXPECT_EQ(v[1].value, inf);  // no noise at all
}

TEST(RunSink, ApplyingValuesRestoresThemAndIgnoresUnknownNodesAndNames) {
  const Report original = report_of({{"b", 0.25}, {"a", NodeReport::kNone}, {"c", 3.0}});
  Report r = report_of({{"b", NodeReport::kNone}, {"a", NodeReport::kNone}, {"c", NodeReport::kNone}});
  std::vector<NodeValue> values = node_values(original);
  values.push_back({"gone", kGradSnr, 9.0});
  values.push_back({"a", "newer_measure", 9.0});
  apply_node_values(r, values);
  EXPECT_EQ(r.nodes[0].grad_snr, 0.25);
  EXPECT_TRUE(std::isnan(r.nodes[1].grad_snr));
  EXPECT_EQ(r.nodes[2].grad_snr, 3.0);
  EXPECT_EQ(r.nodes.size(), 3u);
}

}  // namespace
}  // namespace gradscope
