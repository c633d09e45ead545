// Per-head attention statistics against values computed here independently (softmax written
// out, no shared code), and the attention rules on planted growth, collapse and healthy heads.
#include "gradscope/core/attention/head_stats.h"
#include "gradscope/core/attention/history.h"
#include "gradscope/core/attention/rules.h"
#include "gradscope/core/audit/rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;
constexpr float kHidden = -std::numeric_limits<float>::infinity();

// The reference: weights p = exp(l) / sum exp(l) over visible keys (no max subtraction: the
// logits here are small enough), entropy -sum p log p, largest weight max p, in long double.
// The kernel takes exp in float: its sums agree to 1e-5 over ten rows.
struct Expected {
  double max_logit = -1e300;
  double entropy_sum = 0, fraction_sum = 0;
  int64_t queries = 0, fraction_queries = 0, top = 0;
};

void expect_row(const std::vector<float>& row, Expected& e) {
  long double total = 0;
  int visible = 0;
  for (float l : row)
    if (l != kHidden) total += std::exp(static_cast<long double>(l)), ++visible;
  if (visible == 0) return;
  long double h = 0, top = 0;
  for (float l : row) {
    if (l == kHidden) continue;
    const long double p = std::exp(static_cast<long double>(l)) / total;
    if (p > 0) h -= p * std::log(p);
    top = std::max(top, p);
    e.max_logit = std::max(e.max_logit, static_cast<double>(l));
  }
  ++e.queries;
  e.entropy_sum += static_cast<double>(h);
  if (visible >= 2) ++e.fraction_queries, e.fraction_sum += static_cast<double>(h / std::log(static_cast<long double>(visible)));
  if (top > 0.99L) ++e.top;
}

// [batch 2, heads 3, queries 5, keys 5], causal. Head 0: every query puts logit 12 on key 0
// and 0 on the others (one-hot); head 1: all logits equal (uniform); head 2: random logits in
// [-4, 4].
std::vector<float> planted_logits(const AttentionShape& s) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-4.f, 4.f);
  std::vector<float> out;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t q = 0; q < s.queries; ++q)
        for (int64_t k = 0; k < s.keys; ++k) {
          if (k > q) out.push_back(kHidden);
          else if (h == 0) out.push_back(k == 0 ? 12.f : 0.f);
          else if (h == 1) out.push_back(0.5f);
          else out.push_back(u(rng));
        }
  return out;
}

TEST(AttentionStats, PlantedHeadsMatchAnIndependentSoftmax) {
  const AttentionShape shape{2, 3, 5, 5};
  const std::vector<float> logits = planted_logits(shape);
  const std::vector<HeadStats> got = attention_head_stats(logits.data(), shape);
  ASSERT_EQ(got.size(), 3u);
  for (int64_t h = 0; h < 3; ++h) {
    Expected e;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t q = 0; q < 5; ++q) {
        const auto at = logits.begin() + ((b * 3 + h) * 5 + q) * 5;
        expect_row(std::vector<float>(at, at + 5), e);
      }
    const HeadStats& g = got[static_cast<std::size_t>(h)];
    SCOPED_TRACE("head " + std::to_string(h));
    EXPECT_EQ(g.queries, e.queries);
    EXPECT_EQ(g.queries, 10);
    EXPECT_EQ(g.fraction_queries, 8);  // query 0 sees one key
    EXPECT_DOUBLE_EQ(g.max_logit, e.max_logit);
    EXPECT_NEAR(g.entropy_sum, e.entropy_sum, 1e-5);
    EXPECT_NEAR(g.entropy_fraction_sum, e.fraction_sum, 1e-5);
    EXPECT_EQ(g.top_queries, e.top);
  }
  // Head 0 is one-hot (exp(12) against at most 4 ones: weight > 0.9997) on every query;
  // head 1 is uniform: entropy log(keys seen), fraction 1, only query 0 above 0.99.
  EXPECT_EQ(got[0].top_queries, 10);
  EXPECT_LT(got[0].mean_entropy_fraction(), 0.01);
  EXPECT_NEAR(got[1].mean_entropy(), (std::log(1.) + std::log(2.) + std::log(3.) + std::log(4.) + std::log(5.)) / 5, 1e-12);
  EXPECT_NEAR(got[1].mean_entropy_fraction(), 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(got[1].top_fraction(), 0.2);
  EXPECT_DOUBLE_EQ(got[1].max_logit, 0.5);
}

TEST(AttentionStats, AVisibleMaskReadsAsHiddenLogitsDo) {
  // The planted logits without their -inf, and the causal mask as bytes instead: the same sums.
  const AttentionShape shape{2, 3, 5, 5};
  const std::vector<float> masked = planted_logits(shape);
  std::vector<float> open = masked;
  for (float& l : open)
    if (l == kHidden) l = 1e4f;  // would dominate every row were it read
  std::vector<uint8_t> causal(25);
  for (int q = 0; q < 5; ++q)
    for (int k = 0; k < 5; ++k) causal[static_cast<std::size_t>(q * 5 + k)] = k <= q;
  const auto want = attention_head_stats(masked.data(), shape);
  const auto got = attention_head_stats(open.data(), shape, causal.data());
  for (std::size_t h = 0; h < 3; ++h) {
    EXPECT_EQ(got[h].queries, want[h].queries);
    EXPECT_EQ(got[h].fraction_queries, want[h].fraction_queries);
    EXPECT_EQ(got[h].top_queries, want[h].top_queries);
    EXPECT_EQ(got[h].max_logit, want[h].max_logit);
    EXPECT_EQ(got[h].entropy_sum, want[h].entropy_sum);
  }
}

TEST(AttentionStats, LargeLogitsDoNotOverflow) {
  const std::vector<float> row = {3000.f, 2990.f, -5000.f};
  const HeadStats h = attention_head_stats(row.data(), {1, 1, 1, 3})[0];
  EXPECT_DOUBLE_EQ(h.max_logit, 3000.0);
  const double p2 = std::exp(-10.0) / (1 + std::exp(-10.0));  // the second key's weight
  EXPECT_NEAR(h.mean_entropy(), -(1 - p2) * std::log(1 - p2) - p2 * std::log(p2), 1e-9);
  EXPECT_EQ(h.top_queries, 1);
}

TEST(AttentionStats, HiddenRowsAndNonFiniteRowsAreNotCounted) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> rows = {kHidden, kHidden,  // no key visible: not a query
                                   nan, 1.f,          // NaN: counted apart
                                   inf, 0.f,          // +Inf: counted apart
                                   2.f, kHidden};     // one key: entropy 0, no fraction
  const HeadStats h = attention_head_stats(rows.data(), {1, 1, 4, 2})[0];
  EXPECT_EQ(h.queries, 1);
  EXPECT_EQ(h.nonfinite_queries, 2);
  EXPECT_EQ(h.fraction_queries, 0);
  EXPECT_DOUBLE_EQ(h.max_logit, 2.0);
  EXPECT_DOUBLE_EQ(h.mean_entropy(), 0.0);
  EXPECT_TRUE(std::isnan(h.mean_entropy_fraction()));
  EXPECT_DOUBLE_EQ(h.top_fraction(), 1.0);
}

TEST(AttentionStats, MergeOfHalvesEqualsTheWhole) {
  const AttentionShape shape{2, 3, 5, 5};
  const std::vector<float> logits = planted_logits(shape);
  const auto whole = attention_head_stats(logits.data(), shape);
  const auto first = attention_head_stats(logits.data(), {1, 3, 5, 5});
  const auto second = attention_head_stats(logits.data() + 75, {1, 3, 5, 5});
  for (std::size_t h = 0; h < 3; ++h) {
    const HeadStats m = merge(first[h], second[h]);
    EXPECT_EQ(m.queries, whole[h].queries);
    EXPECT_EQ(m.top_queries, whole[h].top_queries);
    EXPECT_DOUBLE_EQ(m.max_logit, whole[h].max_logit);
    EXPECT_NEAR(m.entropy_sum, whole[h].entropy_sum, 1e-12);
  }
  // An empty side keeps the other's max, whatever its sign.
  HeadStats neg;
  neg.queries = 1;
  neg.max_logit = -3;
  EXPECT_DOUBLE_EQ(merge(HeadStats{}, neg).max_logit, -3.0);
  EXPECT_DOUBLE_EQ(merge(neg, HeadStats{}).max_logit, -3.0);
}

TEST(AttentionStats, BadShapesAreRefused) {
  EXPECT_THROW(attention_head_stats(nullptr, {1, 1, -1, 2}), Error);
  EXPECT_THROW(attention_head_stats(nullptr, {1, 1, 2, 2}), Error);
  EXPECT_EQ(attention_head_stats(nullptr, {1, 4, 0, 2}).size(), 4u);
}

// A head at one step: the given largest logit and entropy fraction over 100 queries.
HeadStats head(double max_logit, double fraction, int64_t top = 0) {
  HeadStats h;
  h.queries = h.fraction_queries = 100;
  h.max_logit = max_logit;
  h.entropy_fraction_sum = 100 * fraction;
  h.entropy_sum = 100 * fraction * 3;
  h.top_queries = top;
  return h;
}

TEST(AttentionRules, LogitGrowthNeedsPersistenceAndAStartBelowTheThreshold) {
  const Thresholds t;
  HeadTrack grows, blip, born_large;
  const double grow[] = {3, 8, 40, 150, 400, 900, 1400};
  const double spike[] = {3, 3, 250, 3, 3, 250, 260, 3};
  for (int i = 0; i < 7; ++i) grows.add(10 * i, head(grow[i], 0.8), t);
  for (int i = 0; i < 8; ++i) blip.add(10 * i, head(spike[i], 0.8), t);
  for (int i = 0; i < 7; ++i) born_large.add(10 * i, head(300, 0.8), t);
  EXPECT_EQ(grows.since(Flag::kAttentionLogitGrowth), 30);  // 150, 400, 900: three samples in a row from step 30
  EXPECT_DOUBLE_EQ(grows.run(Flag::kAttentionLogitGrowth)->worst, 1400);
  EXPECT_EQ(blip.since(Flag::kAttentionLogitGrowth), -1);   // never three in a row
  EXPECT_EQ(born_large.since(Flag::kAttentionLogitGrowth), -1);
}

TEST(AttentionRules, CollapseIsAgainstTheHeadsOwnEarlyLevelAndTheFloor) {
  const Thresholds t;
  HeadTrack collapses, sharp_from_start, dip;
  const double fall[] = {0.95, 0.9, 0.7, 0.2, 0.05, 0.02, 0.01, 0.01};
  for (int i = 0; i < 8; ++i) collapses.add(i, head(5, fall[i], i >= 4 ? 90 : 0), t);
  // A head sharp by design (a previous-token head): low from its first samples.
  for (int i = 0; i < 8; ++i) sharp_from_start.add(i, head(5, 0.08), t);
  const double once[] = {0.9, 0.9, 0.9, 0.05, 0.05, 0.9, 0.05, 0.9};
  for (int i = 0; i < 8; ++i) dip.add(i, head(5, once[i]), t);
  EXPECT_EQ(collapses.since(Flag::kAttentionEntropyCollapse), 4);
  EXPECT_DOUBLE_EQ(collapses.run(Flag::kAttentionEntropyCollapse)->worst, 0.01);
  EXPECT_DOUBLE_EQ(collapses.run(Flag::kAttentionEntropyCollapse)->at_worst.top_fraction(), 0.9);
  EXPECT_EQ(sharp_from_start.since(Flag::kAttentionEntropyCollapse), -1);
  EXPECT_EQ(dip.since(Flag::kAttentionEntropyCollapse), -1);
}

TEST(AttentionRules, ReportNamesTheNodeTheHeadsAndTheStep) {
  ReportBuilder b;
  for (int64_t step = 0; step < 12; ++step) {
    const bool late = step >= 5;
    b.add(Record{step, "blocks.0.attn", Site::kParamGrad, Stats{}});
    b.add(AttentionRecord{step, "blocks.0.attn",
                          {head(4, 0.9), head(late ? 200.0 * step : 5, late ? 0.01 : 0.9, late ? 95 : 0), head(5, 0.85)}});
    b.add(AttentionRecord{step, "blocks.1.attn", {head(4, 0.9), head(6, 0.7)}});
  }
  const Report r = b.build();
  ASSERT_EQ(r.nodes.size(), 2u);
  const NodeReport& bad = r.nodes[0];
  EXPECT_TRUE(bad.flags.contains(Flag::kAttentionLogitGrowth));
  EXPECT_TRUE(bad.flags.contains(Flag::kAttentionEntropyCollapse));
  for (const Evidence& e : bad.evidence) {
    if (e.flag != Flag::kAttentionLogitGrowth && e.flag != Flag::kAttentionEntropyCollapse) continue;
    EXPECT_EQ(e.first_step, 5);
    EXPECT_EQ(e.site, Site::kAttentionLogits);
    EXPECT_EQ(e.detail, "head 1 of 3");
    EXPECT_THAT(e.measure, HasSubstr("head 1"));
    if (e.flag == Flag::kAttentionLogitGrowth) EXPECT_DOUBLE_EQ(e.value, 2200);
    else EXPECT_DOUBLE_EQ(e.value, 0.01);
  }
  EXPECT_FALSE(r.nodes[1].flags.contains(Flag::kAttentionLogitGrowth));
  EXPECT_FALSE(r.nodes[1].flags.contains(Flag::kAttentionEntropyCollapse));
  EXPECT_THROW(b.add(AttentionRecord{20, "blocks.1.attn", {head(4, 0.9)}}), Error);
}

TEST(AttentionHistory, KeepsEvenlySpreadSamplesPerNodeInBoundedMemory) {
  AttentionHistory h(4);
  for (int64_t step = 0; step < 100; ++step) {
    h.add({step, "a", {HeadStats{}}});
    if (step % 10 == 0) h.add({step, "b", {HeadStats{}}});
  }
  std::vector<int64_t> a, b;
  for (const AttentionRecord& r : h.records()) (r.node == "a" ? a : b).push_back(r.step);
  // 100 samples of a: halved at 8 kept (stride 2), at 8 again (stride 4), at 8 (stride 8),
  // at 8 (stride 16): steps 0, 16, ..., 96.
  EXPECT_EQ(a, (std::vector<int64_t>{0, 16, 32, 48, 64, 80, 96}));
  // 10 samples of b (every 10th step): halved once, at 8 kept.
  EXPECT_EQ(b, (std::vector<int64_t>{0, 20, 40, 60, 80}));
  EXPECT_EQ(h.records().front().node, "a");  // nodes in the order they came
}

}  // namespace
}  // namespace gradscope
