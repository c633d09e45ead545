// The attention statistics' two kernels (scalar, and AVX2 with a polynomial exp) on rows wide
// enough for the vector code, its tail and its periodic flush into double sums, against a
// softmax written out here in long double; and hostile rows (NaN, +Inf, hidden NaN, all
// hidden, huge logits) placed where the vector code reads them.
#include "gradscope/core/attention/head_stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

constexpr float kHidden = -std::numeric_limits<float>::infinity();

// The reference for one head over rows of `keys` (hidden: -inf): sums as HeadStats keeps them.
struct Reference {
  double max_logit = -1e300, entropy_sum = 0, fraction_sum = 0;
  int64_t queries = 0, nonfinite = 0, fraction_queries = 0, top = 0;
};

void reference_row(const float* row, int64_t keys, Reference& r) {
  int64_t visible = 0;
  bool nonfinite = false;
  long double m = -INFINITY;
  for (int64_t k = 0; k < keys; ++k) {
    if (row[k] == kHidden) continue;
    ++visible;
    if (std::isnan(row[k]) || std::isinf(row[k])) nonfinite = true;
    else m = std::max(m, static_cast<long double>(row[k]));
  }
  if (visible == 0) return;
  if (nonfinite) {
    ++r.nonfinite;
    return;
  }
  long double total = 0;
  for (int64_t k = 0; k < keys; ++k)
    if (row[k] != kHidden) total += std::exp(static_cast<long double>(row[k]) - m);
  long double h = 0, top = 0;
  for (int64_t k = 0; k < keys; ++k) {
    if (row[k] == kHidden) continue;
    const long double p = std::exp(static_cast<long double>(row[k]) - m) / total;
    if (p > 0) h -= p * std::log(p);
    top = std::max(top, p);
  }
  ++r.queries;
  r.max_logit = std::max(r.max_logit, static_cast<double>(m));
  r.entropy_sum += static_cast<double>(h);
  if (visible >= 2) ++r.fraction_queries, r.fraction_sum += static_cast<double>(h / std::log(static_cast<long double>(visible)));
  if (top > 0.99L) ++r.top;
}

std::vector<Kernel> kernels_here() {
  std::vector<Kernel> k = {Kernel::kScalar, Kernel::kAuto};
  if (avx2_available()) k.push_back(Kernel::kAvx2);
  return k;
}

void expect_matches(const HeadStats& got, const Reference& want, double per_row_tolerance) {
  EXPECT_EQ(got.queries, want.queries);
  EXPECT_EQ(got.nonfinite_queries, want.nonfinite);
  EXPECT_EQ(got.fraction_queries, want.fraction_queries);
  EXPECT_EQ(got.top_queries, want.top);
  if (want.queries > 0) {
    EXPECT_DOUBLE_EQ(got.max_logit, want.max_logit);
  }
  EXPECT_NEAR(got.entropy_sum, want.entropy_sum, per_row_tolerance * static_cast<double>(want.queries));
  EXPECT_NEAR(got.entropy_fraction_sum, want.fraction_sum, per_row_tolerance * static_cast<double>(want.queries));
}

TEST(AttentionKernels, WideRowsAgreeWithALongDoubleSoftmaxOnEveryKernel) {
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-30.f, 30.f);
  // 8: one whole vector; 9 and 15: a tail; 300 and 1000: past the flush every 32 vectors.
  for (const int64_t keys : {1, 7, 8, 9, 15, 64, 67, 300, 1000}) {
    const AttentionShape shape{2, 3, keys, keys};
    std::vector<float> logits;
    for (int64_t b = 0; b < shape.batch; ++b)
      for (int64_t h = 0; h < shape.heads; ++h)
        for (int64_t q = 0; q < keys; ++q)
          for (int64_t k = 0; k < keys; ++k) {
            const float l = h == 0 ? (k == q / 2 ? 12.f : 0.f)        // one-hot
                            : h == 1 ? 0.25f                          // uniform
                                     : u(rng) * static_cast<float>(q % 3) / 2;  // spread
            logits.push_back(k > q ? kHidden : l);                   // causal
          }
    for (const Kernel kernel : kernels_here()) {
      SCOPED_TRACE("keys " + std::to_string(keys) + ", kernel " + std::to_string(static_cast<int>(kernel)));
      const std::vector<HeadStats> got = attention_head_stats(logits.data(), shape, nullptr, kernel);
      for (int64_t h = 0; h < shape.heads; ++h) {
        Reference want;
        for (int64_t b = 0; b < shape.batch; ++b)
          for (int64_t q = 0; q < keys; ++q)
            reference_row(logits.data() + ((b * shape.heads + h) * keys + q) * keys, keys, want);
        expect_matches(got[static_cast<std::size_t>(h)], want, 2e-6);
      }
      // A uniform row's entropy is log(keys seen) to double rounding: exp(0) is exactly 1.
      double uniform = 0;
      for (int64_t q = 0; q < keys; ++q) uniform += std::log(static_cast<double>(q + 1));
      EXPECT_NEAR(got[1].entropy_sum, 2 * uniform, 1e-9 * static_cast<double>(keys));
    }
  }
}

TEST(AttentionKernels, AByteMaskReadsAsHiddenLogitsDoOnWideRows) {
  // Every other key hidden through the mask, the logits under it 1e4 (or NaN): never read.
  const int64_t keys = 37;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-5.f, 5.f);
  std::vector<float> open, masked;
  std::vector<uint8_t> see(static_cast<std::size_t>(keys * keys));
  for (int64_t q = 0; q < keys; ++q)
    for (int64_t k = 0; k < keys; ++k) {
      const bool visible = (k + q) % 2 == 0 && k <= q;
      see[static_cast<std::size_t>(q * keys + k)] = visible ? 1 : 0;
      const float l = u(rng);
      masked.push_back(visible ? l : kHidden);
      open.push_back(visible ? l : (k % 3 ? 1e4f : std::numeric_limits<float>::quiet_NaN()));
    }
  for (const Kernel kernel : kernels_here()) {
    const HeadStats got = attention_head_stats(open.data(), {1, 1, keys, keys}, see.data(), kernel)[0];
    Reference want;
    for (int64_t q = 0; q < keys; ++q) reference_row(masked.data() + q * keys, keys, want);
    expect_matches(got, want, 2e-6);
  }
}

TEST(AttentionKernels, NonFiniteAndHiddenRowsAreCountedTheSameOnEveryKernel) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const int64_t keys = 19;  // two whole vectors and a tail of three
  std::vector<std::vector<float>> rows(6, std::vector<float>(keys, 0.5f));
  rows[0].assign(keys, kHidden);        // no key visible: not a query
  rows[1][10] = nan;                    // NaN inside a vector
  rows[2][3] = inf;                     // +Inf inside a vector
  rows[3][17] = nan;                    // NaN in the tail
  rows[4].assign(keys, kHidden);        // one visible key in the second vector: entropy 0
  rows[4][12] = 2.f;
  rows[5][0] = 3000.f, rows[5][9] = 2990.f;  // huge logits: weights exp(-2999.5) elsewhere
  for (float& l : rows[5])
    if (l == 0.5f) l = -5000.f;
  std::vector<float> logits;
  for (const auto& r : rows) logits.insert(logits.end(), r.begin(), r.end());
  Reference want;
  for (const auto& r : rows) reference_row(r.data(), keys, want);
  ASSERT_EQ(want.queries, 2);
  ASSERT_EQ(want.nonfinite, 3);
  for (const Kernel kernel : kernels_here()) {
    const HeadStats got = attention_head_stats(logits.data(), {1, 1, 6, keys}, nullptr, kernel)[0];
    expect_matches(got, want, 1e-9);
    EXPECT_DOUBLE_EQ(got.max_logit, 3000.0);
  }
}

// Logits that span more than FLT_MAX: l - max overflows float to -inf, and a term exp(-inf) x
// -inf would be NaN (read as entropy 0). The keys at the far end weigh nothing: the entropy is
// log(keys at the top). Three keys (the scalar code, also the vector kernel's tail) and 16 (two
// whole vectors, the far keys in both).
TEST(AttentionKernels, LogitsSpanningMoreThanTheFloatRangeKeepTheirEntropy) {
  const float top = 3e38f, far = -3e38f;
  std::vector<float> narrow = {top, top, far};
  std::vector<float> wide(16, far);
  wide[2] = wide[13] = top;  // two at the top, one in each vector
  std::vector<float> even(16, far);
  for (int64_t k = 0; k < 16; k += 2) even[static_cast<std::size_t>(k)] = top;  // eight at the top
  for (const Kernel kernel : kernels_here()) {
    SCOPED_TRACE("kernel " + std::to_string(static_cast<int>(kernel)));
    const HeadStats a = attention_head_stats(narrow.data(), {1, 1, 1, 3}, nullptr, kernel)[0];
    EXPECT_EQ(a.queries, 1);
    EXPECT_EQ(a.nonfinite_queries, 0);
    EXPECT_NEAR(a.entropy_sum, std::log(2.0), 1e-9);
    EXPECT_DOUBLE_EQ(a.max_logit, static_cast<double>(top));
    const HeadStats b = attention_head_stats(wide.data(), {1, 1, 1, 16}, nullptr, kernel)[0];
    EXPECT_NEAR(b.entropy_sum, std::log(2.0), 1e-9);
    EXPECT_NEAR(b.entropy_fraction_sum, std::log(2.0) / std::log(16.0), 1e-9);
    const HeadStats c = attention_head_stats(even.data(), {1, 1, 1, 16}, nullptr, kernel)[0];
    EXPECT_NEAR(c.entropy_sum, std::log(8.0), 1e-9);
    EXPECT_EQ(c.top_queries, 0);
  }
}

TEST(AttentionKernels, TheVectorKernelIsRefusedWhereTheCpuLacksIt) {
  const std::vector<float> row(8, 0.f);
  if (avx2_available())
    EXPECT_EQ(attention_head_stats(row.data(), {1, 1, 1, 8}, nullptr, Kernel::kAvx2)[0].queries, 1);
  else
    EXPECT_THROW(attention_head_stats(row.data(), {1, 1, 1, 8}, nullptr, Kernel::kAvx2), Error);
}

}  // namespace
}  // namespace gradscope
