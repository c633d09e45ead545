// AuditOptions::histogram_every: element histograms of the activation, output gradient and
// parameter gradients of each node at the sampled steps, handed to the sink, with counts equal
// to a naive count of the same tensors in TensorBoard's default buckets.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <limits>
#include <map>

#include "audit/state.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

// Every step the audit hands over.
struct Capture : RunSink {
  std::vector<StepRecords> steps;
  void add_step(const StepRecords& s) override { steps.push_back(s); }
  void set_summary(const RunSummary&) override {}
};

std::map<std::size_t, uint64_t> naive_buckets(const at::Tensor& t, uint64_t* num, uint64_t* nonfinite) {
  const std::vector<double>& l = histogram_bucket_limits();
  const at::Tensor d = t.detach().to(at::kDouble).contiguous().flatten();
  std::map<std::size_t, uint64_t> out;
  *num = *nonfinite = 0;
  for (int64_t i = 0; i < d.numel(); ++i) {
    const double v = d[i].item<double>();
    if (!std::isfinite(v)) {
      ++*nonfinite;
      continue;
    }
    ++*num;
    ++out[std::min<std::size_t>(std::upper_bound(l.begin(), l.end(), v) - l.begin(), l.size() - 1)];
  }
  return out;
}

void expect_counts_of(const ElementHistogram& h, const at::Tensor& t) {
  uint64_t num = 0, nonfinite = 0;
  const auto want = naive_buckets(t, &num, &nonfinite);
  EXPECT_EQ(h.num, num) << h.node;
  EXPECT_EQ(h.nonfinite, nonfinite) << h.node;
  const std::map<std::size_t, uint64_t> got(h.buckets.begin(), h.buckets.end());
  EXPECT_EQ(got, want) << h.node;
  uint64_t total = 0;
  for (const auto& b : h.buckets) total += b.second;
  EXPECT_EQ(total, h.num);
  if (num > 0) {
    const at::Tensor all = t.detach().to(at::kDouble).flatten();
    const at::Tensor finite = all.index({at::isfinite(all)});
    EXPECT_EQ(h.min, finite.min().item<double>());
    EXPECT_EQ(h.max, finite.max().item<double>());
    EXPECT_NEAR(h.sum, finite.sum().item<double>(), 1e-9 * (1 + finite.abs().sum().item<double>()));
  }
}

const ElementHistogram* find(const StepRecords& s, const std::string& node, Site site) {
  for (const ElementHistogram& h : s.histograms)
    if (h.node == node && h.site == site) return &h;
  return nullptr;
}

TEST(AuditHistogram, SampledStepsCountEachTensorsElements) {
  ::torch::manual_seed(0);
  ::torch::nn::Linear fc1(6, 16), fc2(16, 3);
  Capture sink;
  AuditOptions o;
  o.histogram_every = 2;
  o.sink = &sink;
  Audit audit({{"fc1", fc1.ptr()}, {"fc2", fc2.ptr()}}, o);
  ::torch::optim::SGD opt(std::vector<at::Tensor>{fc1->weight, fc1->bias, fc2->weight, fc2->bias}, 0.1);
  std::map<int64_t, std::map<std::string, at::Tensor>> seen;
  for (int64_t step = 0; step < 5; ++step) {
    opt.zero_grad();
    const at::Tensor x = ::torch::randn({8, 6});
    at::Tensor h = audit.tap("fc1", ::torch::relu(fc1(x)));
    h.retain_grad();
    at::Tensor y = audit.tap("fc2", fc2(h));
    y.retain_grad();
    y.pow(2).sum().backward();
    auto& s = seen[step];
    s["fc1/activation"] = h.detach().clone();
    s["fc2/activation"] = y.detach().clone();
    s["fc1/output_grad"] = h.grad().clone();
    s["fc2/output_grad"] = y.grad().clone();
    s["fc1/param_grad"] = ::torch::cat({fc1->weight.grad().flatten(), fc1->bias.grad()});
    s["fc2/param_grad"] = ::torch::cat({fc2->weight.grad().flatten(), fc2->bias.grad()});
    audit.step(opt);
  }
  ASSERT_EQ(sink.steps.size(), 5u);
  for (const StepRecords& s : sink.steps) {
    if (s.step % 2 != 0) {
      EXPECT_TRUE(s.histograms.empty()) << s.step;
      continue;
    }
    ASSERT_EQ(s.histograms.size(), 6u) << s.step;
    for (const std::string node : {"fc1", "fc2"})
      for (const auto& [site, name] : {std::pair{Site::kActivation, "activation"},
                                       std::pair{Site::kOutputGrad, "output_grad"},
                                       std::pair{Site::kParamGrad, "param_grad"}}) {
        const ElementHistogram* h = find(s, node, site);
        ASSERT_NE(h, nullptr) << node << " " << name << " at " << s.step;
        EXPECT_EQ(h->step, s.step);
        expect_counts_of(*h, seen[s.step][node + "/" + name]);
      }
  }
  // fc1's activation is after a ReLU: its zeros fall in the bucket [0, 1e-12).
  const ElementHistogram* relu = find(sink.steps[0], "fc1", Site::kActivation);
  const std::size_t zero_bucket = (histogram_bucket_limits().size() + 1) / 2;
  ASSERT_FALSE(relu->buckets.empty());
  EXPECT_EQ(relu->buckets.front().first, zero_bucket);
}

TEST(AuditHistogram, OffByDefaultAndOnlyAtAuditedSteps) {
  ::torch::nn::Linear fc(3, 2);
  for (const auto& [every, sample, want] : {std::tuple{0, 1, std::vector<int64_t>{}},
                                            std::tuple{1, 2, std::vector<int64_t>{0, 2}},
                                            std::tuple{2, 2, std::vector<int64_t>{0}}}) {
    Capture sink;
    AuditOptions o;
    o.histogram_every = every;
    o.sample_every = sample;
    o.sink = &sink;
    Audit audit({{"fc", fc.ptr()}}, o);
    for (int step = 0; step < 4; ++step) {
      fc->zero_grad();
      audit.tap("fc", fc(::torch::randn({4, 3}))).sum().backward();
      audit.step([] {});
    }
    std::vector<int64_t> got;
    for (const StepRecords& s : sink.steps)
      if (!s.histograms.empty()) got.push_back(s.step);
    EXPECT_EQ(got, want) << every << " " << sample;
  }
  AuditOptions bad;
  bad.histogram_every = -1;
  EXPECT_THROW(Audit({{"fc", fc.ptr()}}, bad), Error);
}

TEST(AuditHistogram, HalfPrecisionNonFiniteAndSparseTensors) {
  // bf16 and f16 are counted through an exact float copy; NaN and Inf are left out.
  at::Tensor x = ::torch::linspace(-3, 3, 101);
  x[5] = std::numeric_limits<float>::quiet_NaN();
  x[7] = std::numeric_limits<float>::infinity();
  for (const auto dtype : {at::kBFloat16, at::kHalf, at::kFloat, at::kDouble}) {
    const at::Tensor t = x.to(dtype);
    const ElementHistogram h = element_histogram(t, 1, "n", Site::kActivation);
    EXPECT_EQ(h.num, 99u);
    EXPECT_EQ(h.nonfinite, 2u);
    expect_counts_of(h, t);
  }
  // A strided view reads its own elements only.
  const at::Tensor m = ::torch::arange(12, at::kFloat).reshape({3, 4}).t();
  expect_counts_of(element_histogram(m, 0, "n", Site::kActivation), m);
  // Sparse: the stored values (touched rows), as the statistics read them.
  const at::Tensor sparse = ::torch::eye(4).mul(2.5).to_sparse();
  const ElementHistogram s = element_histogram(sparse, 0, "n", Site::kParamGrad);
  EXPECT_EQ(s.num, 4u);
  EXPECT_EQ(s.sum, 10.0);
  // Integer tensors have no histogram.
  EXPECT_EQ(element_histogram(::torch::ones({3}, at::kLong), 0, "n", Site::kActivation).num, 0u);
}

}  // namespace
}  // namespace gradscope::torch
