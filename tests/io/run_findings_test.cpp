// Everything in the run (schema 3): channel and similarity records committed with their step,
// the run's summary (architecture, warnings, per-node values, thresholds), a saved-run report
// equal to the in-memory one, and schema-2 runs still read.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "../common/report_equal.h"
#include "gradscope/core/audit/rules.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/io/store/saved_report.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using test::fresh_dir;
using test::node_name;
using test::same_stats;
using test::stats_for;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Per-channel summaries whose values depend on (step, node, channel): a reader can check each.
std::vector<Stats> channel_stats(int64_t step, int node, int channels) {
  std::vector<Stats> out;
  for (int c = 0; c < channels; ++c) out.push_back(stats_for(step + c, node));
  return out;
}

// Step `step` of a 3-node run: records, a channel view of layer.1 every other step (no output
// gradient at step 2, no effective rank at step 4), and two similarity records.
StepRecords step_of(int64_t step) {
  StepRecords s;
  s.step = step;
  for (int n = 0; n < 3; ++n) s.records.push_back({step, node_name(n), Site::kActivation, stats_for(step, n)});
  if (step % 2 == 0) {
    ChannelRecord c{step, node_name(1), channel_stats(step, 1, 5), channel_stats(step, 7, 5), 1.5 + step};
    if (step == 2) c.output_grad.clear();
    if (step == 4) c.effective_rank = kNaN;
    s.channels.push_back(c);
  }
  s.similarities.push_back({step, node_name(0), node_name(2), 0.25 * static_cast<double>(step)});
  s.similarities.push_back({step, node_name(2), "layer.2[0:2] vs layer.2[2:4] \"q\"\n", -0.0});
  return s;
}

RunSummary summary_of() {
  RunSummary s;
  s.thresholds.leakage_cka = 0.5;
  s.architecture.nodes = {{node_name(2), "torch::nn::LinearImpl", 0, 30, 30},
                          {node_name(0), "free", 1, 0, 0},
                          {node_name(1), "Seq\"uential</script>", -1, 12, 4},
                          {"never.recorded", "torch::nn::ReLUImpl", -1, 0, 0}};
  s.warnings = {"node 'layer.1': scope matched 9 submodules, kept the first 3 (max_modules)", "\x1b[31mred\n"};
  s.values = {{node_name(2), kGradSnr, 0.125}, {node_name(0), kGradSnr, kInf}, {node_name(1), "unknown", kNaN}};
  return s;
}

fs::path write_full_run(const std::string& name, int steps) {
  const fs::path dir = fresh_dir(name);
  RunWriter w(dir.string());
  for (int64_t step = 0; step < steps; ++step) w.add_step(step_of(step));
  w.set_summary(summary_of());
  w.close();
  return dir;
}

TEST(RunFindings, ChannelAndSimilarityRecordsRoundTripExactlyWithTheirStep) {
  const fs::path dir = write_full_run("findings-roundtrip", 6);
  RunReader r(dir.string());
  std::vector<Record> records;
  std::vector<ChannelRecord> channels;
  std::vector<SimilarityRecord> similarities;
  const int64_t steps = r.for_each(RunVisitor{[&](const Record& x) { records.push_back(x); },
                                              [&](const ChannelRecord& c) { channels.push_back(c); },
                                              [&](const SimilarityRecord& s) { similarities.push_back(s); }, {}});
  EXPECT_EQ(steps, 6);
  EXPECT_EQ(records.size(), 18u);
  ASSERT_EQ(channels.size(), 3u);
  for (std::size_t i = 0; i < channels.size(); ++i) {
    const ChannelRecord want = step_of(static_cast<int64_t>(2 * i)).channels.at(0);
    const ChannelRecord& got = channels[i];
    EXPECT_EQ(got.step, want.step);
    EXPECT_EQ(got.node, want.node);
    ASSERT_EQ(got.activation.size(), want.activation.size());
    ASSERT_EQ(got.output_grad.size(), want.output_grad.size());
    for (std::size_t c = 0; c < want.activation.size(); ++c) EXPECT_TRUE(same_stats(got.activation[c], want.activation[c]));
    for (std::size_t c = 0; c < want.output_grad.size(); ++c)
      EXPECT_TRUE(same_stats(got.output_grad[c], want.output_grad[c]));
    EXPECT_TRUE(test::same_double(got.effective_rank, want.effective_rank)) << i;
  }
  EXPECT_TRUE(channels[1].output_grad.empty());
  EXPECT_TRUE(std::isnan(channels[2].effective_rank));
  ASSERT_EQ(similarities.size(), 12u);
  for (std::size_t i = 0; i < similarities.size(); ++i) {
    const SimilarityRecord want = step_of(static_cast<int64_t>(i / 2)).similarities.at(i % 2);
    EXPECT_EQ(similarities[i].step, want.step);
    EXPECT_EQ(similarities[i].node, want.node);
    EXPECT_EQ(similarities[i].other, want.other);
    EXPECT_TRUE(test::same_double(similarities[i].cka, want.cka)) << i;
  }
  EXPECT_TRUE(r.warnings().empty());
  // A range reads the channel view of its own steps only.
  channels.clear();
  r.for_each(RunVisitor{{}, [&](const ChannelRecord& c) { channels.push_back(c); }, {}, {}}, StepRange{1, 3});
  ASSERT_EQ(channels.size(), 1u);
  EXPECT_EQ(channels[0].step, 2);
  fs::remove_all(dir);
}

TEST(RunFindings, TheSummaryRoundTripsAndItsThresholdsBecomeTheRuns) {
  const fs::path dir = write_full_run("findings-summary", 2);
  RunReader r(dir.string());
  EXPECT_EQ(r.metadata().thresholds.leakage_cka, 0.5);
  const RunSummary want = summary_of(), got = r.summary();
  EXPECT_EQ(got.thresholds.leakage_cka, 0.5);
  EXPECT_TRUE(test::same_architecture(got.architecture, want.architecture));
  EXPECT_EQ(got.warnings, want.warnings);
  ASSERT_EQ(got.values.size(), want.values.size());
  for (std::size_t i = 0; i < want.values.size(); ++i) {
    EXPECT_EQ(got.values[i].node, want.values[i].node);
    EXPECT_EQ(got.values[i].name, want.values[i].name);
    EXPECT_TRUE(test::same_double(got.values[i].value, want.values[i].value)) << i;
  }
  EXPECT_TRUE(r.warnings().empty());
  fs::remove_all(dir);
}

TEST(RunFindings, ALaterSummaryReplacesAnEarlierOneAndARunWithoutOneHasNone) {
  const fs::path dir = fresh_dir("findings-replace");
  {
    RunWriter w(dir.string());
    w.add_step(step_of(0));
    w.set_summary(summary_of());
    RunSummary later;
    later.architecture.nodes = {{"only", "t", 0, 1, 1}};
    later.warnings = {"one"};
    w.set_summary(later);
    w.add_step(step_of(1));
  }
  RunReader r(dir.string());
  const RunSummary s = r.summary();
  ASSERT_EQ(s.architecture.nodes.size(), 1u);
  EXPECT_EQ(s.architecture.nodes[0].id, "only");
  EXPECT_EQ(s.warnings, std::vector<std::string>{"one"});
  EXPECT_TRUE(s.values.empty());
  EXPECT_EQ(r.for_each([](const Record&) {}), 2);
  fs::remove_all(dir);

  const fs::path none = fresh_dir("findings-none");
  RunWriter(none.string()).add_step(step_of(0));
  RunReader n(none.string());
  EXPECT_TRUE(n.summary().architecture.nodes.empty());
  EXPECT_TRUE(n.warnings().empty());
  fs::remove_all(none);
}

TEST(RunFindings, InvalidSummaryThresholdsAreRefusedByTheProducer) {
  const fs::path dir = fresh_dir("findings-bad-thresholds");
  RunWriter w(dir.string());
  RunSummary s;
  s.thresholds.dead_frac = 2;
  EXPECT_THROW(w.set_summary(s), Error);
  w.close();
  EXPECT_THROW(w.set_summary(RunSummary{}), Error);  // after close
  fs::remove_all(dir);
}

// The report the way Audit::report() builds it: nodes declared in execution order, records,
// channel and similarity records, then the values no record holds.
Report in_memory_report(int steps) {
  const RunSummary summary = summary_of();
  ReportBuilder b(summary.thresholds);
  for (const ArchitectureNode& n : summary.architecture.nodes) b.declare(n.id);
  std::vector<ChannelRecord> channels;
  std::vector<SimilarityRecord> similarities;
  for (int64_t step = 0; step < steps; ++step) {
    StepRecords s = step_of(step);
    for (const Record& r : s.records) b.add(r);
    channels.insert(channels.end(), s.channels.begin(), s.channels.end());
    similarities.insert(similarities.end(), s.similarities.begin(), s.similarities.end());
  }
  for (const ChannelRecord& c : channels) b.add(c);
  for (const SimilarityRecord& s : similarities) b.add(s);
  Report report = b.build();
  for (NodeReport& n : report.nodes) {
    if (n.node == node_name(2)) n.grad_snr = 0.125;
    if (n.node == node_name(0)) n.grad_snr = kInf;
  }
  return report;
}

TEST(RunFindings, TheSavedRunsReportEqualsTheInMemoryOne) {
  const fs::path dir = write_full_run("findings-report", 6);
  RunReader r(dir.string());
  SavedReportBuilder b(r.summary());
  r.for_each(b.visitor());
  const Report saved = b.build(), memory = in_memory_report(6);
  EXPECT_TRUE(test::same_report(saved, memory));
  // The findings only the channel and similarity records and the summary give are there.
  ASSERT_EQ(saved.nodes.size(), 4u);
  EXPECT_EQ(saved.nodes[0].node, node_name(2));  // the architecture's order, not first-seen
  EXPECT_EQ(saved.nodes[3].node, "never.recorded");
  EXPECT_EQ(saved.nodes[2].channels, 5);
  EXPECT_TRUE(saved.nodes[1].flags.contains(Flag::kLeakage));  // mean CKA 0.625 > 0.5
  EXPECT_EQ(saved.nodes[0].grad_snr, 0.125);
  EXPECT_EQ(saved.thresholds.leakage_cka, 0.5);
  fs::remove_all(dir);
}

TEST(RunFindings, ARunOfSchemaTwoStillReadsExactly) {
  // Written by the schema-2 writer (as of commit d35d453): no channels, similarities or summary.
  const fs::path dir = fresh_dir("schema2");
  fs::copy_file(fs::path(GRADSCOPE_GOLDEN_DIR) / "run_schema2.db", dir / "run.db");
  RunReader r(dir.string());
  EXPECT_EQ(r.metadata().name, "v2-run");
  EXPECT_EQ(r.metadata().schema_version, 2);
  EXPECT_EQ(r.metadata().command_line, "train --v2");
  EXPECT_EQ(r.metadata().thresholds.grad_hi, 100);
  std::vector<Record> got;
  int channels = 0;
  EXPECT_EQ(r.for_each(RunVisitor{[&](const Record& rec) { got.push_back(rec); },
                                  [&](const ChannelRecord&) { ++channels; }, [&](const SimilarityRecord&) { ++channels; }, {}}),
            6);
  EXPECT_EQ(channels, 0);
  ASSERT_EQ(got.size(), 18u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const int step = static_cast<int>(i / 3), node = static_cast<int>(i % 3);
    EXPECT_EQ(got[i].step, step);
    EXPECT_EQ(got[i].node, node_name(node));
    EXPECT_EQ(got[i].site, static_cast<Site>((step + node) % kSiteCount));
    EXPECT_TRUE(same_stats(got[i].stats, stats_for(step, node)));
  }
  const RunSummary s = r.summary();
  EXPECT_TRUE(s.architecture.nodes.empty() && s.warnings.empty() && s.values.empty());
  EXPECT_EQ(s.thresholds.grad_hi, 100);
  SavedReportBuilder b(s);
  r.for_each(b.visitor());
  EXPECT_TRUE(test::same_report(b.build(), build_report(got, s.thresholds)));
  EXPECT_TRUE(r.warnings().empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradscope
