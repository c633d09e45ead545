// What the audit keeps in memory: records of the last keep_steps audited steps (a ring), and a
// report judged as each step ends, the same however many records are kept.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <algorithm>
#include <limits>
#include <set>

#include "../common/error_of.h"
#include "../common/same_report.h"
#include "gradscope/core/audit/rules.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

namespace nn = ::torch::nn;

// Ten steps of a small MLP with a channel view (two groups: similarity records) on fc1; the
// input turns NaN at step 6, so NaN and the origin are in the report too.
Report train(AuditOptions o, int steps, Audit** out = nullptr, std::unique_ptr<Audit>* keep = nullptr) {
  ::torch::manual_seed(0);
  nn::Sequential net({{"fc1", nn::Linear(6, 8)}, {"act1", nn::Tanh()}, {"fc2", nn::Linear(8, 3)}});
  o.channels["fc1"] = ChannelView{1, 2, {{0, 4}, {4, 8}}};
  o.gradient_snr = true;
  auto audit = std::make_unique<Audit>(net, o);
  ::torch::optim::SGD opt(net->parameters(), 0.1);
  at::manual_seed(1);
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    at::Tensor x = at::randn({16, 6});
    if (s == 6) x[0][0] = std::numeric_limits<float>::quiet_NaN();
    audit->forward(net, x).pow(2).sum().backward();
    audit->step(opt);
  }
  Report r = audit->report();
  if (out && keep) {
    *out = audit.get();
    *keep = std::move(audit);
  }
  return r;
}

std::set<int64_t> steps_of(const std::vector<Record>& records) {
  std::set<int64_t> out;
  for (const Record& r : records) out.insert(r.step);
  return out;
}

TEST(AuditRing, RecordsAreTheLastStepsAndTheReportCoversEveryStep) {
  AuditOptions all;
  all.keep_steps = 0;
  Audit* kept_all = nullptr;
  std::unique_ptr<Audit> hold_all;
  const Report full = train(all, 10, &kept_all, &hold_all);
  // The reference: every record rebuilt into one report, as report() did before the ring.
  ReportBuilder reference(Thresholds{});
  for (const std::string& id : kept_all->node_ids()) reference.declare(id);
  std::vector<Record> records = kept_all->records();
  std::stable_sort(records.begin(), records.end(), [](const Record& a, const Record& b) { return a.step < b.step; });
  for (const Record& r : records) reference.add(r);
  for (const ChannelRecord& c : kept_all->channel_records()) reference.add(c);
  for (const SimilarityRecord& s : kept_all->similarity_records()) reference.add(s);
  Report rebuilt = reference.build();
  for (std::size_t i = 0; i < rebuilt.nodes.size(); ++i) rebuilt.nodes[i].grad_snr = full.nodes[i].grad_snr;
  test::expect_same_report(full, rebuilt);
  EXPECT_EQ(full.steps, 10);
  EXPECT_EQ(full.nonfinite_origin.step, 6);
  EXPECT_EQ(full.nodes.at(0).channels, 8);
  EXPECT_GT(full.nodes.at(0).grad_snr, 0.0);
  EXPECT_EQ(steps_of(kept_all->records()).size(), 10u);

  AuditOptions ring;
  ring.keep_steps = 3;
  Audit* kept = nullptr;
  std::unique_ptr<Audit> hold;
  test::expect_same_report(train(ring, 10, &kept, &hold), full);
  EXPECT_EQ(steps_of(kept->records()), (std::set<int64_t>{7, 8, 9}));
  std::set<int64_t> channel_steps, similarity_steps;
  for (const ChannelRecord& c : kept->channel_records()) channel_steps.insert(c.step);
  for (const SimilarityRecord& s : kept->similarity_records()) similarity_steps.insert(s.step);
  EXPECT_EQ(channel_steps, (std::set<int64_t>{8}));  // sampled every 2nd step
  EXPECT_EQ(similarity_steps, (std::set<int64_t>{8}));

  AuditOptions none;
  none.keep_records = false;
  test::expect_same_report(train(none, 10), full);
}

// The step being recorded is in records() and report() before step() ends it.
TEST(AuditRing, TheStepBeingRecordedIsIncluded) {
  nn::Linear fc(3, 2);
  AuditOptions o;
  o.keep_steps = 1;
  Audit audit({{"fc", fc.ptr()}}, o);
  for (int s = 0; s < 3; ++s) {
    audit.tap("fc", fc->forward(at::ones({2, 3})));
    audit.step([] {});
  }
  audit.tap("fc", at::ones({2, 2}));
  EXPECT_EQ(steps_of(audit.records()), (std::set<int64_t>{2, 3}));
  EXPECT_EQ(audit.report().steps, 4);
  EXPECT_EQ(audit.report().nodes.at(0).steps, 4);
}

// on_step sees every step's records once, and the ring already holds that step.
TEST(AuditRing, OnStepSeesEveryStepWhileTheRingKeepsTwo) {
  nn::Linear fc(3, 2);
  AuditOptions o;
  o.keep_steps = 2;
  std::vector<int64_t> handed;
  Audit* self = nullptr;
  o.on_step = [&](const std::vector<Record>& records) {
    for (const Record& r : records) handed.push_back(r.step);
    EXPECT_EQ(*steps_of(self->records()).rbegin(), records.at(0).step);
  };
  Audit audit({{"fc", fc.ptr()}}, o);
  self = &audit;
  for (int s = 0; s < 5; ++s) {
    audit.tap("fc", fc->forward(at::ones({2, 3})));
    audit.step([] {});
  }
  std::set<int64_t> distinct(handed.begin(), handed.end());
  EXPECT_EQ(distinct, (std::set<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(handed.size(), 5u * 2u);  // activation and parameter (no gradient: no update)
  EXPECT_EQ(steps_of(audit.records()), (std::set<int64_t>{3, 4}));
}

TEST(AuditRing, NegativeKeepStepsIsAnError) {
  nn::Linear fc(3, 2);
  AuditOptions o;
  o.keep_steps = -1;
  EXPECT_EQ(test::error_of([&] { Audit({{"fc", fc.ptr()}}, o); }), "audit: keep_steps must be >= 0");
}

}  // namespace
}  // namespace gradscope::torch
