// The one kernel choice (core/stats/kernel.h): kScalar as asked, kAuto the fastest this CPU
// runs, kAvx2 an Error naming the kernel on a CPU without AVX2. The seam pretend_no_avx2()
// makes this machine such a CPU, so each kernel's behaviour there is checked here too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>
#include <vector>

#include "../common/error_of.h"
#include "gradscope/core/attention/head_stats.h"
#include "gradscope/core/optim/adam_pass.h"
#include "gradscope/core/optim/sgd_pass.h"
#include "gradscope/core/stats/carry.h"
#include "gradscope/core/stats/kernel.h"
#include "gradscope/core/stats/stats.h"
#include "stats/internal/cpu_seam.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;

// This machine without AVX2 while it lives.
struct NoAvx2 {
  NoAvx2() { internal::pretend_no_avx2(true); }
  ~NoAvx2() { internal::pretend_no_avx2(false); }
};

TEST(Kernel, ScalarIsScalarAndAutoTheFastest) {
  EXPECT_EQ(resolve_kernel(Kernel::kScalar, "k"), Kernel::kScalar);
  EXPECT_EQ(resolve_kernel(Kernel::kAuto, "k"), avx2_available() ? Kernel::kAvx2 : Kernel::kScalar);
  if (avx2_available()) {
    EXPECT_EQ(resolve_kernel(Kernel::kAvx2, "k"), Kernel::kAvx2);
  }
}

TEST(Kernel, WithoutAvx2AutoFallsBackAndAvx2IsAnErrorNamingTheKernel) {
  const bool had = avx2_available();
  {
    NoAvx2 pretend;
    EXPECT_FALSE(avx2_available());
    EXPECT_EQ(resolve_kernel(Kernel::kAuto, "adam"), Kernel::kScalar);
    EXPECT_EQ(resolve_kernel(Kernel::kScalar, "adam"), Kernel::kScalar);
    EXPECT_EQ(test::error_of([] { resolve_kernel(Kernel::kAvx2, "adam"); }),
              "adam: avx2 kernel requested but this cpu lacks avx2/fma/f16c");
  }
  EXPECT_EQ(avx2_available(), had);  // the seam lets go
}

// Every kernel goes through resolve_kernel: on a CPU without AVX2 each one runs with kAuto
// (the scalar result) and refuses kAvx2 naming itself.
TEST(Kernel, EveryKernelBehavesAlikeWithoutAvx2) {
  std::vector<float> x = {1, -2, 0.5f, 3, -0.25f, 7, 0, 2};
  std::vector<float> p = x, g = x, m(x.size()), v(x.size()), b(x.size()), before = x;
  const auto n = static_cast<int64_t>(x.size());
  const TensorView view = TensorView::contiguous(x.data(), DType::kFloat32, {n});
  const AdamCoefficients adam = adam_coefficients(1e-3, 0.9, 0.999, 1e-8, 0, 1);
  const SgdCoefficients sgd = sgd_coefficients(1e-2, 0, 0, 0, false, true);
  FusedStats fused;
  // Each kernel with the given choice, and the name its error must carry.
  const std::vector<std::pair<const char*, std::function<void(Kernel)>>> kernels = {
      {"stats", [&](Kernel k) { compute(view, StatsOptions{1e-7, 50, 1, k}); }},
      {"stats", [&](Kernel k) { compute_difference(view, view, StatsOptions{1e-7, 50, 1, k}); }},
      {"stats", [&](Kernel k) { compute_update_and_carry(view, before.data(), StatsOptions{1e-7, 50, 1, k}); }},
      {"attention logits", [&](Kernel k) { attention_head_stats(x.data(), {1, 1, 1, n}, nullptr, k); }},
      {"adam", [&](Kernel k) { adam_pass(p.data(), g.data(), m.data(), v.data(), n, adam, StatsOptions{1e-7, 50, 1, k}, &fused); }},
      {"adam", [&](Kernel k) { adam_pass(p.data(), g.data(), m.data(), v.data(), n, adam, StatsOptions{1e-7, 50, 1, k}, nullptr); }},
      {"sgd", [&](Kernel k) { sgd_pass(p.data(), g.data(), b.data(), n, sgd, StatsOptions{1e-7, 50, 1, k}, &fused); }},
      {"sgd", [&](Kernel k) { sgd_pass(p.data(), g.data(), b.data(), n, sgd, StatsOptions{1e-7, 50, 1, k}, nullptr); }},
  };
  NoAvx2 pretend;
  for (const auto& [who, run] : kernels) {
    EXPECT_EQ(test::error_of([&] { run(Kernel::kAuto); }), "no error") << who;
    EXPECT_EQ(test::error_of([&] { run(Kernel::kAvx2); }), std::string(who) + ": avx2 kernel requested but this cpu lacks avx2/fma/f16c");
  }
}

}  // namespace
}  // namespace gradscope
