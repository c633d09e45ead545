// Audit::record_loss, record_grad_norm and clip_grad_norm: every step's values reach the sink,
// those of steps the audit did not sample with the next sampled step; the norm recorded equals
// the one LibTorch's clip_grad_norm_ returns; the report judges the loss.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <cmath>
#include <map>

#include "gradscope/core/error.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

using ::testing::HasSubstr;

struct Capture : RunSink {
  std::vector<StepRecords> steps;
  void add_step(const StepRecords& s) override { steps.push_back(s); }
  void set_summary(const RunSummary&) override {}
};

TEST(AuditSeries, EveryStepsLossReachesTheSinkAndTheReport) {
  ::torch::manual_seed(0);
  ::torch::nn::Linear fc(4, 1);
  Capture sink;
  AuditOptions o;
  o.sample_every = 3;
  o.sink = &sink;
  Audit audit({{"fc", fc.ptr()}}, o);
  ::torch::optim::SGD opt(fc->parameters(), 0.01);
  std::vector<double> norms;
  for (int64_t step = 0; step < 12; ++step) {
    opt.zero_grad();
    const at::Tensor loss = fc(::torch::randn({8, 4}) * (step == 7 ? 100.0 : 1.0)).pow(2).mean();
    loss.backward();
    // The truth: the global L2 of the gradients before clipping, computed here.
    norms.push_back(fc->weight.grad().norm().pow(2).add(fc->bias.grad().norm().pow(2)).sqrt().item<double>());
    audit.record_loss(step == 11 ? std::nan("") : loss.item<double>());
    audit.record_loss(-1.0);  // a second value in a step is ignored
    audit.record_scalar(kBatchSeries, static_cast<double>(step));
    EXPECT_NEAR(audit.clip_grad_norm(0.5), norms.back(), 1e-6 * norms.back());
    audit.step(opt);
  }
  // Sampled steps 0, 3, 6, 9: the scalars of 1-3 come with step 3, ... and those of 10-11 wait
  // for a sampled step that never comes.
  ASSERT_EQ(sink.steps.size(), 4u);
  std::map<int64_t, std::map<std::string, double>> got;
  for (const StepRecords& s : sink.steps)
    for (const StepScalar& x : s.scalars) {
      EXPECT_LE(x.step, s.step);
      got[x.step][x.name] = x.value;
    }
  ASSERT_EQ(got.size(), 10u);
  EXPECT_EQ(got[4][kBatchSeries], 4.0);
  EXPECT_NEAR(got[7][kGradNormSeries], norms[7], 1e-6 * norms[7]);
  EXPECT_NEAR(got[7][kClippedGradNormSeries], 0.5, 1e-5);
  EXPECT_GT(got[5][kLossSeries], 0);  // the first value of the step, not -1
  // The report holds every step's, the not yet handed ones too; finish() hands those to the sink
  // as a step of scalars alone, and the report counts them once.
  EXPECT_EQ(audit.report().series.loss_steps, 12);
  audit.finish();
  ASSERT_EQ(sink.steps.size(), 5u);
  EXPECT_EQ(sink.steps.back().step, 11);
  EXPECT_TRUE(sink.steps.back().records.empty());
  ASSERT_EQ(sink.steps.back().scalars.size(), 8u);  // loss, batch, norm before and after, steps 10-11
  EXPECT_EQ(sink.steps.back().scalars.front().step, 10);
  EXPECT_EQ(sink.steps.back().scalars[2].name, kGradNormSeries);  // before clipping, then after
  EXPECT_EQ(sink.steps.back().scalars[3].name, kClippedGradNormSeries);
  audit.finish();  // nothing more to hand
  EXPECT_EQ(sink.steps.size(), 5u);
  const Report r = audit.report();
  EXPECT_EQ(r.series.loss_steps, 12);
  EXPECT_TRUE(r.series.diverged());  // NaN at step 11
  EXPECT_EQ(r.series.first_nonfinite_loss, 11);
  EXPECT_EQ(r.series.grad_norm_steps, 12);
  EXPECT_EQ(r.series.clip_known_steps, 12);
  int64_t clipped = 0;
  for (double n : norms) clipped += n > 0.5 * (1 + 1e-6);
  EXPECT_EQ(r.series.clipped_steps, clipped);
}

TEST(AuditSeries, OutputLogitsGiveTheMeanLogPartitionAtAttentionSteps) {
  ::torch::nn::Linear fc(2, 3);
  Capture sink;
  AuditOptions o;
  o.attention_every = 2;
  o.sink = &sink;
  Audit audit({{"fc", fc.ptr()}}, o);
  ::torch::optim::SGD opt(fc->parameters(), 0.01);
  // Rows with known log-partitions: log(e^0 + e^0 + e^0) = log 3, and log(e^10 + 2 e^-10),
  // computed here in long double; a shift of every logit by c moves log Z by c.
  const long double row1 = std::log(std::exp(10.0L) + 2 * std::exp(-10.0L));
  for (int64_t step = 0; step < 4; ++step) {
    opt.zero_grad();
    fc(::torch::ones({1, 2})).sum().backward();
    const double c = static_cast<double>(step);
    const at::Tensor logits = ::torch::tensor({{0.0, 0.0, 0.0}, {10.0, -10.0, -10.0}}, ::torch::kBFloat16) + c;
    audit.record_output_logits(logits);
    {
      ::torch::NoGradGuard evaluation;  // an evaluation pass: not recorded
      audit.record_output_logits(logits * 100);
    }
    audit.step(opt);
  }
  std::map<int64_t, std::map<std::string, double>> got;
  for (const StepRecords& s : sink.steps)
    for (const StepScalar& x : s.scalars) got[x.step][x.name] = x.value;
  ASSERT_EQ(got.size(), 2u);  // steps 0 and 2: every attention_every-th
  for (int64_t step : {0, 2}) {
    const long double want = (std::log(3.0L) + row1) / 2 + step;
    EXPECT_NEAR(got[step][kLogZSeries], static_cast<double>(want), 1e-5) << step;
    EXPECT_NEAR(got[step][kLogitMeanSeries], -10.0 / 6.0 + static_cast<double>(step), 1e-5) << step;
  }
  EXPECT_THAT([&] { audit.record_output_logits(::torch::ones({2, 3}, ::torch::kLong)); },
              ::testing::ThrowsMessage<Error>(HasSubstr("non-empty floating-point tensor")));
  EXPECT_THAT([&] { audit.record_output_logits(::torch::empty({0, 3})); },
              ::testing::ThrowsMessage<Error>(HasSubstr("record_output_logits")));
  EXPECT_THAT([&] { audit.record_output_logits(at::Tensor()); },
              ::testing::ThrowsMessage<Error>(HasSubstr("an undefined tensor")));
}

TEST(AuditSeries, BadValuesAreRefused) {
  ::torch::nn::Linear fc(2, 1);
  Audit audit({{"fc", fc.ptr()}}, {});
  EXPECT_THAT([&] { audit.clip_grad_norm(0); }, ::testing::ThrowsMessage<Error>(HasSubstr("max_norm must be finite and > 0")));
  EXPECT_THAT([&] { audit.clip_grad_norm(INFINITY); }, ::testing::ThrowsMessage<Error>(HasSubstr("max_norm")));
  EXPECT_THAT([&] { audit.record_scalar("", 1); }, ::testing::ThrowsMessage<Error>(HasSubstr("1 to 256 bytes")));
}

}  // namespace
}  // namespace gradscope::torch
