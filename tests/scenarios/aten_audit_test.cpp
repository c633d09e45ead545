// A whole audit with every tensor forced through the ATen path (as a GPU run measures) gives
// each node of every scenario the same flags as the fused CPU kernel: the statistics differ
// only in the last bits of their sums (docs/devices.md), never in a count.
#include <gtest/gtest.h>

#include <string>

#include "../common/require_data.h"
#include "aten_stats.h"  // src/torch, internal
#include "digits_data.h"
#include "scenario.h"
#include "scenario_params.h"

namespace gradscope::scenarios {
namespace {

constexpr int kSteps = 30;

ScenarioRun run_with(bool aten, const Scenario& s, const cli::Digits& data) {
  const bool was = torch::internal::aten_stats_forced();
  torch::internal::force_aten_stats(aten);
  ScenarioRun run = run_scenario(s, data, kSteps, /*seed=*/3);
  torch::internal::force_aten_stats(was);
  return run;
}

class AtenAudit : public ::testing::TestWithParam<std::string> {};

TEST_P(AtenAudit, SameFlagsPerNodeAsTheFusedKernel) {
  GRADSCOPE_REQUIRE_DATA(digits_path());
  static const cli::Digits data = cli::load_digits(digits_path(), 0.2, 7);
  const Scenario& s = scenario(GetParam());
  const ScenarioRun fused = run_with(false, s, data);
  const ScenarioRun aten = run_with(true, s, data);
  EXPECT_EQ(aten.report.nonfinite_origin.node, fused.report.nonfinite_origin.node);
  EXPECT_EQ(aten.report.nonfinite_origin.step, fused.report.nonfinite_origin.step);
  ASSERT_EQ(aten.report.nodes.size(), fused.report.nodes.size());
  for (std::size_t i = 0; i < fused.report.nodes.size(); ++i) {
    SCOPED_TRACE(fused.report.nodes[i].node);
    EXPECT_EQ(aten.report.nodes[i].node, fused.report.nodes[i].node);
    EXPECT_EQ(aten.report.nodes[i].flags_label(), fused.report.nodes[i].flags_label());
  }
  // The same records, with the same counts: training was not changed by the measuring.
  ASSERT_EQ(aten.records.size(), fused.records.size());
  for (std::size_t i = 0; i < fused.records.size(); ++i) {
    const Record& a = aten.records[i];
    const Record& f = fused.records[i];
    SCOPED_TRACE(f.node + " step " + std::to_string(f.step));
    EXPECT_EQ(a.node, f.node);
    EXPECT_EQ(a.site, f.site);
    EXPECT_EQ(a.stats.count, f.stats.count);
    EXPECT_EQ(a.stats.nan, f.stats.nan);
    EXPECT_EQ(a.stats.zero, f.stats.zero);
    EXPECT_EQ(a.stats.saturated, f.stats.saturated);
    EXPECT_EQ(a.stats.max_abs, f.stats.max_abs);
  }
}

INSTANTIATE_TEST_SUITE_P(Digits, AtenAudit, ::testing::ValuesIn(scenario_names()), scenario_test_name);

}  // namespace
}  // namespace gradscope::scenarios
