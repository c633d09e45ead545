#include "gradscope/torch/audit/parameter_probe.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>

#include "gradscope/core/audit/rules.h"

namespace gradscope::torch {
namespace {

namespace nn = ::torch::nn;

TEST(ParameterProbe, RecordsGradientAndValueOfEveryParameter) {
  ::torch::manual_seed(0);
  nn::Sequential net({{"fc1", nn::Linear(4, 3)}, {"fc2", nn::Linear(3, 2)}});
  net->forward(::torch::randn({5, 4})).pow(2).sum().backward();
  const std::vector<Record> records = ParameterProbe(*net).measure(7);
  ASSERT_EQ(records.size(), 8u);  // 4 parameters x (gradient, value)
  EXPECT_EQ(records[0].node, "fc1.weight");
  EXPECT_EQ(records[0].site, Site::kParamGrad);
  EXPECT_EQ(records[0].step, 7);
  const at::Tensor w = net->named_parameters()["fc1.weight"];
  EXPECT_NEAR(records[0].stats.l2(), w.grad().norm().item<double>(), 1e-6);
  EXPECT_EQ(records[1].site, Site::kParam);
  EXPECT_NEAR(records[1].stats.l2(), w.norm().item<double>(), 1e-6);
  EXPECT_EQ(records[0].stats.count, 12);
}

TEST(ParameterProbe, ParametersWithoutGradientsGetNoGradientRecord) {
  nn::Linear fc(4, 3);
  const std::vector<Record> records = ParameterProbe(*fc, {}, "model/").measure(0);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].node, "model/weight");
  EXPECT_EQ(records[0].site, Site::kParam);
  EXPECT_EQ(records[1].site, Site::kParam);
}

TEST(ParameterProbe, ReportFlagsAZeroedGradientAsVanishing) {
  nn::Linear fc(4, 3);
  fc->forward(::torch::randn({2, 4})).sum().backward();
  {
    ::torch::NoGradGuard no_grad;
    fc->weight.grad().mul_(1e-12);
  }
  ReportBuilder b;
  for (const Record& r : ParameterProbe(*fc).measure(0)) b.add(r);
  const Report report = b.build();
  ASSERT_EQ(report.nodes.size(), 2u);
  EXPECT_EQ(report.nodes[0].flags.join(), "VANISHING");
  EXPECT_EQ(report.nodes[1].flags.join(), "HEALTHY");
}

}  // namespace
}  // namespace gradscope::torch
