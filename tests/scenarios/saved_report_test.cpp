// Everything in the run: every scenario (and the compression demo's training) written to a run
// through the audit's sink reads back as the audit's own report: the same flags, evidence and
// values (doubles bit for bit), node order, NaN origin, gradient SNR, channel findings and
// leakage; and the same architecture, warnings and thresholds.
#include <gtest/gtest.h>
#include <unistd.h>

#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "../common/report_equal.h"
#include "../common/require_data.h"
#include "compression_eval.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/io/store/saved_report.h"
#include "scenario.h"

namespace gradscope::scenarios {
namespace {

namespace fs = std::filesystem;

// Past step 20, where nan-later's NaN starts, and past a channel view's first samples.
constexpr int kSteps = 26;

std::string digits_path() {
  const char* env = std::getenv("GRADSCOPE_DATA_DIR");
  return std::string(env ? env : GRADSCOPE_DEFAULT_DATA_DIR) + "/digits.csv";
}

const cli::Digits& digits() {
  static const cli::Digits data = cli::load_digits(digits_path(), 0.2, 7);
  return data;
}

fs::path run_dir(const std::string& name) {
  return fs::temp_directory_path() / ("gradscope-saved-" + name + "-" + std::to_string(::getpid()));
}

struct Saved {
  Report report;
  RunSummary summary;
  std::vector<std::string> read_warnings;
};

Saved read_back(const fs::path& dir) {
  RunReader reader(dir.string());
  Saved s;
  s.summary = reader.summary();
  SavedReportBuilder builder(s.summary);
  reader.for_each(builder.visitor());
  s.report = builder.build();
  s.read_warnings = reader.warnings();
  return s;
}

class SavedReport : public ::testing::TestWithParam<std::string> {};

TEST_P(SavedReport, EqualsTheInMemoryReport) {
  GRADSCOPE_REQUIRE_DATA(digits_path());
  const Scenario& s = scenario(GetParam());
  const fs::path dir = run_dir(s.name);
  RunWriterOptions store;
  store.overwrite = true;
  ScenarioRun run;
  {
    RunWriter writer(dir.string(), store);
    run = run_scenario(s, digits(), kSteps, 3, {}, &writer);
    writer.close();
  }
  const Saved saved = read_back(dir);
  EXPECT_TRUE(saved.read_warnings.empty());
  EXPECT_TRUE(test::same_report(saved.report, run.report));
  EXPECT_EQ(thresholds_to_json(saved.report.thresholds), thresholds_to_json(run.report.thresholds));
  EXPECT_TRUE(test::same_architecture(saved.summary.architecture, run.architecture));
  EXPECT_EQ(saved.summary.warnings, run.warnings);
  // What only the new tables give: without them these scenarios' findings were lost.
  if (s.expected_flag == Flag::kDeadChannels || s.expected_flag == Flag::kLeakage) {
    bool found = false;
    for (const NodeReport& n : saved.report.nodes) found |= n.node == s.expected_node && n.flags.contains(s.expected_flag);
    EXPECT_TRUE(found) << flag_name(s.expected_flag) << " on " << s.expected_node;
  }
  if (s.expected_flag == Flag::kNaN) {
    EXPECT_EQ(saved.report.nonfinite_origin.node, s.expected_node);
    EXPECT_EQ(saved.report.nonfinite_origin.phase, "forward");
  }
  int64_t channels = 0;
  for (const NodeReport& n : saved.report.nodes) channels += n.channels;
  EXPECT_GT(channels, 0) << "every scenario runs with a channel view of every node";
  fs::remove_all(dir);
}

std::vector<std::string> scenario_names() {
  std::vector<std::string> names;
  for (const Scenario& s : all_scenarios()) names.push_back(s.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(Digits, SavedReport, ::testing::ValuesIn(scenario_names()), [](const auto& info) {
  std::string name = info.param;
  for (char& c : name)
    if (c == '-') c = '_';
  return name;
});

TEST(SavedReport, TheCompressionDemosTrainingEqualsItsInMemoryReport) {
  GRADSCOPE_REQUIRE_DATA(digits_path());
  CompressionTask task = digits_mlp_task();
  task.steps = kSteps;
  const fs::path dir = run_dir("compress");
  RunWriterOptions store;
  store.overwrite = true;
  Trained trained;
  {
    RunWriter writer(dir.string(), store);
    trained = train_for_compression(task, digits(), 1, &writer);
    writer.close();
  }
  const Saved saved = read_back(dir);
  EXPECT_TRUE(test::same_report(saved.report, trained.report));
  EXPECT_EQ(saved.summary.architecture.nodes.size(), trained.report.nodes.size());
  fs::remove_all(dir);
}

// Two nodes, the first with two submodules of which its scope keeps one.
struct TwoNodes : ::torch::nn::Module {
  TwoNodes()
      : block(register_module("block", ::torch::nn::Sequential(::torch::nn::Linear(8, 16), ::torch::nn::ReLU(),
                                                               ::torch::nn::Linear(16, 16)))),
        head(register_module("head", ::torch::nn::Linear(16, 4))) {}
  ::torch::nn::Sequential block;
  ::torch::nn::Linear head;
};

TEST(SavedReport, GradientSnrSubmodulesAndWarningsAreSavedToo) {
  ::torch::manual_seed(0);
  auto model = std::make_shared<TwoNodes>();
  torch::AuditOptions options;
  options.gradient_snr = true;
  torch::NodeScope one = torch::NodeScope::to_depth(1);
  one.max_modules = 1;  // the inner Sequential has two Linears: one is dropped, with a warning
  options.scopes["block"] = one;
  options.channels_all_nodes = torch::ChannelView{1, 2, {{0, 2}, {2, 4}}};
  const fs::path dir = run_dir("snr");
  RunWriterOptions store;
  store.overwrite = true;
  Report memory;
  Architecture architecture;
  std::vector<std::string> warnings;
  {
    RunWriter writer(dir.string(), store);
    options.sink = &writer;
    torch::Audit audit(std::static_pointer_cast<::torch::nn::Module>(model), options);
    ::torch::optim::SGD sgd(model->parameters(), 0.1);
    for (int step = 0; step < 8; ++step) {
      sgd.zero_grad();
      const at::Tensor x = ::torch::randn({32, 8});
      const at::Tensor h = audit.tap("block", model->block->forward(x)).relu();
      audit.tap("head", model->head->forward(h)).pow(2).mean().backward();
      audit.step(sgd);
    }
    audit.finish();
    memory = audit.report();
    architecture = audit.architecture();
    warnings = audit.warnings();
    writer.close();
  }
  const Saved saved = read_back(dir);
  EXPECT_TRUE(test::same_report(saved.report, memory));
  EXPECT_TRUE(test::same_architecture(saved.summary.architecture, architecture));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(saved.summary.warnings, warnings);
  ASSERT_EQ(saved.report.nodes.size(), 3u);  // block, block/0, head
  for (const NodeReport& n : saved.report.nodes) {
    if (n.node.find('/') != std::string::npos) continue;  // submodules have neither
    EXPECT_FALSE(std::isnan(n.grad_snr)) << n.node << ": the SNR comes from the audit's state, not a record";
    EXPECT_GT(n.channels, 0) << n.node;
  }
  fs::remove_all(dir);
}

// A sink that only counts: the audit hands every audited step over once, with its channel and
// similarity records, and the summary only when finish() is called.
struct CountingSink final : RunSink {
  void add_step(const StepRecords& s) override {
    steps.push_back(s.step);
    channels += static_cast<int64_t>(s.channels.size());
    similarities += static_cast<int64_t>(s.similarities.size());
    for (const Record& r : s.records) ok = ok && r.step == s.step;
    for (const ChannelRecord& c : s.channels) ok = ok && c.step == s.step;
    for (const SimilarityRecord& c : s.similarities) ok = ok && c.step == s.step;
  }
  void set_summary(const RunSummary& s) override { summaries.push_back(s); }
  std::vector<int64_t> steps;
  int64_t channels = 0, similarities = 0;
  bool ok = true;
  std::vector<RunSummary> summaries;
};

TEST(SavedReport, TheSinkGetsEachStepOnceWithItsOwnRecords) {
  GRADSCOPE_REQUIRE_DATA(digits_path());
  CountingSink sink;
  const ScenarioRun run = run_scenario(scenario("leaky-branches"), digits(), 11, 1, {}, &sink);
  std::vector<int64_t> want(11);
  for (int64_t i = 0; i < 11; ++i) want[static_cast<std::size_t>(i)] = i;
  EXPECT_EQ(sink.steps, want);
  EXPECT_TRUE(sink.ok);
  EXPECT_GT(sink.channels, 0);
  EXPECT_GT(sink.similarities, 0);
  ASSERT_EQ(sink.summaries.size(), 1u);
  EXPECT_TRUE(test::same_architecture(sink.summaries[0].architecture, run.architecture));
}

}  // namespace
}  // namespace gradscope::scenarios
