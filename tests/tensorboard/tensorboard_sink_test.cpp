#include "gradscope/tensorboard/tensorboard_sink.h"

#include <fcntl.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "decode.h"
#include "gradscope/core/audit/tee_sink.h"

namespace gradscope::tensorboard {
namespace {

Stats stats_of(const std::vector<float>& v) {
  return compute(
      TensorView::contiguous(v.data(), DType::kFloat32, {static_cast<int64_t>(v.size())}));
}

StepRecords step_of(int64_t step, float grad_scale) {
  StepRecords s;
  s.step = step;
  std::vector<float> v(64);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = grad_scale * static_cast<float>(i % 7) - grad_scale;
  s.records.push_back({step, "fc1", Site::kParamGrad, stats_of(v)});
  s.records.push_back({step, "fc1", Site::kActivation, stats_of(v)});
  return s;
}

struct Recording final : RunSink {
  std::vector<int64_t> steps;
  int summaries = 0;
  void add_step(const StepRecords& s) override { steps.push_back(s.step); }
  void set_summary(const RunSummary&) override { ++summaries; }
};

TEST(TeeSink, HandsEveryStepAndSummaryToEachSink) {
  Recording a, b;
  TeeSink tee({&a, &b});
  RunSink& sink = tee;
  sink.add_step(step_of(3, 1));
  sink.add_step(step_of(4, 1));
  sink.set_summary({});
  EXPECT_EQ(a.steps, (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(b.steps, a.steps);
  EXPECT_EQ(a.summaries, 1);
  EXPECT_EQ(b.summaries, 1);
}

TEST(TensorBoardSink, WritesEachStepAndTheFindingsText) {
  const std::string dir = test::fresh_folder("sink");
  std::string path;
  {
    TensorBoardSink sink(dir);
    path = sink.path();
    for (int64_t step = 0; step < 5; ++step) sink.add_step(step_of(step, step < 2 ? 1.0f : 1e-12f));
    sink.set_summary({});
    EXPECT_TRUE(sink.close());
  }
  const test::Decoded d = test::decode_file(path);
  ASSERT_EQ(d.problem, "");
  ASSERT_EQ(d.events.size(), 1u + 5u + 1u);
  float vanishing[5];
  for (int i = 0; i < 5; ++i) {
    const auto& e = d.events[static_cast<std::size_t>(i) + 1];
    EXPECT_EQ(e.step(), i);
    for (const auto& v : e.summary().value())
      if (v.tag() == "flag/VANISHING/fc1") vanishing[i] = v.simple_value();
  }
  EXPECT_EQ(vanishing[1], 0.f);
  EXPECT_EQ(vanishing[2], 1.f);
  const auto& text = d.events.back();
  EXPECT_EQ(text.step(), 4);
  ASSERT_EQ(text.summary().value(0).tag(), kReportTag);
  const std::string report = text.summary().value(0).tensor().string_val(0);
  EXPECT_NE(report.find("fc1"), std::string::npos);
  EXPECT_NE(report.find("\n    verdict: unhealthy"), std::string::npos) << report;
  EXPECT_EQ(report.rfind("    node ", 0), 0u) << report;  // a markdown code block: columns kept
}

// Attention records: their scalars at their step, and the findings text names the head.
TEST(TensorBoardSink, WritesAttentionScalarsAndItsFindings) {
  const std::string dir = test::fresh_folder("sink-attention");
  std::string path;
  {
    TensorBoardSink sink(dir);
    path = sink.path();
    for (int64_t step = 0; step < 6; ++step) {
      StepRecords s = step_of(step, 1.0f);
      HeadStats h;
      h.queries = h.fraction_queries = 8;
      h.max_logit = step < 2 ? 3.0 : 500.0;
      h.entropy_fraction_sum = 8 * 0.9;
      s.attention.push_back({step, "fc1", {h}});
      sink.add_step(s);
    }
    sink.set_summary({});
    EXPECT_TRUE(sink.close());
  }
  const test::Decoded d = test::decode_file(path);
  ASSERT_EQ(d.problem, "");
  std::map<int64_t, float> largest;
  for (const auto& e : d.events)
    for (const auto& v : e.summary().value())
      if (v.tag() == "attention_max_logit/fc1/head0") largest[e.step()] = v.simple_value();
  EXPECT_EQ(largest, (std::map<int64_t, float>{{0, 3.f}, {1, 3.f}, {2, 500.f}, {3, 500.f}, {4, 500.f}, {5, 500.f}}));
  const std::string report = d.events.back().summary().value(0).tensor().string_val(0);
  EXPECT_NE(report.find("ATTENTION_LOGIT_GROWTH since step 2"), std::string::npos) << report;
  EXPECT_NE(report.find("head 0 of 1"), std::string::npos) << report;
}

// The loss of every step, the unsampled ones' at their own steps before the sampled step's
// event, and the findings text heads with the divergence.
TEST(TensorBoardSink, WritesTheLossAtItsOwnStepsAndTheDivergence) {
  const std::string dir = test::fresh_folder("sink-loss");
  std::string path;
  {
    TensorBoardSink sink(dir);
    path = sink.path();
    StepRecords s;
    for (int64_t step = 0; step < 40; ++step) {
      const double loss = step >= 20 ? 90.0 : 3.0 - 0.01 * step;
      s.scalars.push_back({step, kLossSeries, loss});
      if (step % 2 == 0) continue;  // the audit samples every other step
      StepRecords sampled = step_of(step, 1.0f);
      sampled.scalars = s.scalars;
      sink.add_step(sampled);
      s.scalars.clear();
    }
    sink.set_summary({});
    EXPECT_TRUE(sink.close());
  }
  const test::Decoded d = test::decode_file(path);
  ASSERT_EQ(d.problem, "");
  std::map<int64_t, float> loss;
  for (const auto& e : d.events)
    for (const auto& v : e.summary().value())
      if (v.tag() == "loss") loss[e.step()] = v.simple_value();
  ASSERT_EQ(loss.size(), 40u);
  EXPECT_EQ(loss[2], 2.98f);
  EXPECT_EQ(loss[21], 90.f);
  const std::string report = d.events.back().summary().value(0).tensor().string_val(0);
  EXPECT_NE(report.find("verdict: unhealthy: DIVERGENCE at step 20"), std::string::npos) << report;
}

// Live, the sink carries the other kinds too: a table's metrics and profile histograms at the
// last step, a boosted model's measures at each round, with the values the export writes.
TEST(TensorBoardSink, CarriesEmbeddingTablesAndTreeRounds) {
  const std::string dir = test::fresh_folder("sink-kinds");
  EmbeddingRunSummary emb;
  EmbeddingTableSummary t;
  t.report.layer = "item";
  t.report.stats.num_embeddings = 10;
  t.report.stats.exposed_rows = 8;
  t.report.stats.zombie_rows = 2;
  t.profile.layer = "item";
  t.profile.exposure = {{1, 2, 4}, {5, 3}, 0, 0};
  emb.tables.push_back(t);
  TreeDynamicsReport trees;
  for (int32_t k = 0; k < 3; ++k) {
    RoundDynamics r;
    r.round = k;
    r.leaves = 4 + k;
    r.train_loss = 0.5 - 0.1 * k;
    r.gain = 2.0;
    r.features = {{0, 1, 1.5, {}}, {1, 1, 0.5, {}}};  // shares 0.75 and 0.25
    trees.per_round.push_back(r);
  }
  std::string path;
  {
    TensorBoardSink sink(dir);
    path = sink.path();
    for (int64_t step = 0; step < 3; ++step) sink.add_step(step_of(step, 1.0f));
    sink.add_embedding(emb);
    sink.add_tree_rounds(trees);
    EXPECT_TRUE(sink.close());
  }
  const test::Decoded d = test::decode_file(path);
  ASSERT_EQ(d.problem, "");  // every record whole, its CRCs right
  std::map<std::pair<int64_t, std::string>, float> scalars;
  std::map<std::string, std::vector<double>> buckets;
  for (const auto& e : d.events)
    for (const auto& v : e.summary().value()) {
      if (v.has_histo()) buckets[v.tag()] = {v.histo().bucket().begin(), v.histo().bucket().end()};
      else scalars[{e.step(), v.tag()}] = v.simple_value();
    }
  EXPECT_FLOAT_EQ((scalars[{2, "embedding/coverage/item"}]), 0.8f);
  EXPECT_FLOAT_EQ((scalars[{2, "embedding/zombie_fraction/item"}]), 0.2f);
  EXPECT_EQ(buckets["embedding/exposure/item"], (std::vector<double>{0, 5, 3}));
  for (int64_t k = 0; k < 3; ++k) {
    EXPECT_FLOAT_EQ((scalars[{k, "trees/train_loss"}]), static_cast<float>(0.5 - 0.1 * k));
    EXPECT_FLOAT_EQ((scalars[{k, "trees/leaves"}]), static_cast<float>(4 + k));
    EXPECT_FLOAT_EQ((scalars[{k, "trees/split_concentration"}]), 0.625f);  // 0.75^2 + 0.25^2
    EXPECT_EQ(scalars.count({k, "trees/valid_loss"}), 0u);  // not measured: not written
  }
}

// A full disk mid-run: training goes on, the error is reported once, the file ends at a
// whole record. RLIMIT_FSIZE with SIGXFSZ ignored makes the writes fail as ENOSPC would.
TEST(TensorBoardSink, FullDiskMidRunIsReportedOnceAndTrainingGoesOn) {
  const std::string dir = test::fresh_folder("sink-full");
  const int code = test::in_child_with_file_limit(30000, [&] {
    int errors = 0;
    std::string message;
    TensorBoardSinkOptions o;
    o.on_error = [&](const std::string& m) {
      ++errors;
      message = m;
    };
    o.flush_seconds = 0;  // write every step, so the limit is met mid-run
    TensorBoardSink sink(dir, o);
    int64_t trained = 0;
    for (int64_t step = 0; step < 3000; ++step) {
      sink.add_step(step_of(step, 1.0f));  // must not throw
      ++trained;
    }
    sink.set_summary({});
    const bool closed = sink.close();
    if (trained != 3000) return 10;
    if (errors != 1) return 11;
    if (message.find("File too large") == std::string::npos ||
        message.find("training goes on") == std::string::npos)
      return 12;
    if (closed || !sink.failed()) return 13;
    return 0;
  });
  ASSERT_EQ(code, 0);
  const test::Decoded d = test::decode_file(test::only_event_file(dir));
  EXPECT_EQ(d.problem, "");
  EXPECT_LE(d.bytes, 30000u);
  EXPECT_GT(d.events.size(), 50u);
}

TEST(TensorBoardSink, DefaultReportIsOneLineOnStderr) {
  const std::string dir = test::fresh_folder("sink-stderr");
  const std::string err = dir + "/stderr.txt";
  const int code = test::in_child_with_file_limit(20000, [&] {
    const int fd =
        ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);  // before the limit bites
    dup2(fd, 2);
    TensorBoardSinkOptions o;
    o.flush_seconds = 0;
    TensorBoardSink sink(dir + "/tb", o);
    for (int64_t step = 0; step < 2000; ++step) sink.add_step(step_of(step, 1.0f));
    sink.close();
    return 0;
  });
  ASSERT_EQ(code, 0);
  std::ifstream in(err);
  std::string line, all;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    all += line;
  }
  EXPECT_EQ(lines, 1) << all;
  EXPECT_EQ(all.rfind("gradscope: warning: tensorboard: cannot write '", 0), 0u) << all;
}

}  // namespace
}  // namespace gradscope::tensorboard
