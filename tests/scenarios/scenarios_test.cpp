// The planted-pathology suite: every scenario trained on the real digits data under one audit
// policy at default thresholds, six seeds each. Controls must have no flag; each pathology
// must be flagged with its flag, and the first node in execution order carrying that flag
// must be the one where it was planted. Nothing is tuned per scenario.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "../common/require_data.h"
#include "digits_data.h"
#include "gradscope/core/error.h"
#include "scenario.h"
#include "scenario_params.h"

namespace gradscope::scenarios {
namespace {

constexpr int kSteps = 60;

const cli::Digits* digits() {
  static std::unique_ptr<cli::Digits> data;
  if (!data) data = std::make_unique<cli::Digits>(cli::load_digits(digits_path(), 0.2, 7));
  return data.get();
}

std::string describe(const Report& r) {
  std::string out;
  for (const NodeReport& n : r.nodes) out += "  " + n.node + " " + n.flags_label() + "\n";
  return out;
}

class Scenarios : public ::testing::TestWithParam<std::string> {};

void check(const Scenario& s, const ScenarioRun& run);

TEST_P(Scenarios, FlaggedExactlyWherePlanted) {
  GRADSCOPE_REQUIRE_DATA(digits_path());
  const Scenario& s = scenario(GetParam());
  for (uint64_t seed : {1, 2, 3, 4, 5, 6}) {
    const ScenarioRun run = run_scenario(s, *digits(), kSteps, seed);
    SCOPED_TRACE(s.name + " (" + s.planted + "), seed " + std::to_string(seed) + "\n" + describe(run.report));
    check(s, run);
  }
}

void check(const Scenario& s, const ScenarioRun& run) {
  const Report& r = run.report;
  if (s.healthy) {
    EXPECT_TRUE(r.healthy());
    EXPECT_GT(run.test_accuracy, 0.5);  // the controls really learn
    return;
  }
  if (s.expected_flag == Flag::kNaN) {
    // NaN spreads to every node through backward; the node is where it started.
    EXPECT_EQ(r.nonfinite_origin.node, s.expected_node);
    EXPECT_EQ(r.nonfinite_origin.step, 20);
    EXPECT_EQ(r.nonfinite_origin.phase, "forward");
    EXPECT_EQ(r.flagged_worst_first().at(0)->node, s.expected_node);
    return;
  }
  const NodeReport* first = nullptr;
  for (const NodeReport& n : r.nodes)
    if (n.flags.contains(s.expected_flag)) {
      first = &n;
      break;
    }
  ASSERT_NE(first, nullptr) << "no node flagged " << flag_name(s.expected_flag);
  EXPECT_EQ(first->node, s.expected_node);
}

INSTANTIATE_TEST_SUITE_P(Digits, Scenarios, ::testing::ValuesIn(scenario_names()), scenario_test_name);

TEST(ScenarioList, NamesAreUniqueAndKnown) {
  EXPECT_EQ(all_scenarios().size(), 12u);
  EXPECT_THROW(scenario("nope"), Error);
}

}  // namespace
}  // namespace gradscope::scenarios
