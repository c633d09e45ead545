// The update pass carries the next step's value statistics and snapshot when every step is
// audited; the parameter's version counter says whether anything wrote it in between.
#include <ATen/Functions.h>
#include <gtest/gtest.h>
#include <torch/optim/sgd.h>

#include <vector>

#include "../core/test_data.h"
#include "audit_test_util.h"
#include "gradscope/core/stats/stats.h"
#include "gradscope/torch/audit/audit.h"

namespace gradscope::torch {
namespace {

using audit_test::mlp;
using audit_test::of;

Stats stats_of_copy(const at::Tensor& t) {
  const at::Tensor c = t.detach().contiguous().clone();
  return compute(TensorView::contiguous(c.data_ptr<float>(), DType::kFloat32, {c.numel()}));
}

// Every step's parameter and update records against the test's own copies of fc1's weight and
// bias before and after each step; between steps 2 and 3 the weight is halved in place (a
// weight clip, an EMA swap): the carried value would be stale, the version counter says so.
TEST(AuditCarry, CarriedValuesAreTheParametersAndAWriteBetweenStepsIsSeen) {
  auto net = mlp();
  ::torch::optim::SGD opt(net->parameters(), 0.1);
  Audit audit(net);
  at::manual_seed(1);
  std::vector<Stats> expected_value, expected_update;
  for (int step = 0; step < 5; ++step) {
    if (step == 3) {
      ::torch::NoGradGuard no_grad;
      net->parameters()[0].mul_(0.5);
    }
    opt.zero_grad();
    audit.forward(net, at::randn({4, 6})).pow(2).sum().backward();
    const at::Tensor w0 = net->parameters()[0].detach().clone(), b0 = net->parameters()[1].detach().clone();
    audit.step(opt);
    const at::Tensor w1 = net->parameters()[0].detach(), b1 = net->parameters()[1].detach();
    expected_value.push_back(merge(stats_of_copy(w0), stats_of_copy(b0)));
    expected_update.push_back(merge(stats_of_copy(w1 - w0), stats_of_copy(b1 - b0)));
  }
  const std::vector<Record> values = of(audit.records(), "fc1", Site::kParam);
  const std::vector<Record> updates = of(audit.records(), "fc1", Site::kUpdate);
  ASSERT_EQ(values.size(), 5u);
  ASSERT_EQ(updates.size(), 5u);
  for (std::size_t k = 0; k < 5; ++k) {
    SCOPED_TRACE(k);
    test::expect_same(values[k].stats, expected_value[k]);
    test::expect_same(updates[k].stats, expected_update[k]);
  }
}

}  // namespace
}  // namespace gradscope::torch
