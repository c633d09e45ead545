// The channel-view and histogram part of RankMerge's buffer, without processes
// (src/torch/distributed/views.h).
#include "distributed/views.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "../common/record_fields.h"
#include "distributed/wire.h"

namespace gradscope::torch::internal {
namespace {

Stats stats_of(std::vector<double> v) {
  return compute(TensorView::contiguous(v.data(), DType::kFloat64, {static_cast<int64_t>(v.size())}));
}

ElementHistogram histogram_of(std::vector<double> v, const std::string& node, Site site) {
  HistogramCounter c;
  c.add(v.data(), v.size());
  return c.take(3, node, site);
}

int index_of(const std::string& node) { return node == "a" ? 0 : node == "b" ? 1 : 2; }

struct Rank {
  std::vector<ChannelRecord> channels;
  std::vector<ElementHistogram> histograms;
  std::vector<AttentionRecord> attention;
  std::vector<int64_t> words;
  void pack() { words = pack_views(channels, histograms, attention, index_of); }
};

TEST(DistributedViews, MergesChannelsPerChannelAndAddsHistogramCounts) {
  Rank r0, r1;
  // Packed in node order whatever order they come in.
  r0.channels = {{3, "b", {stats_of({1, 2}), stats_of({-1})}, {}}, {3, "a", {stats_of({5})}, {stats_of({0.5})}}};
  r1.channels = {{3, "a", {stats_of({7, NAN})}, {stats_of({-2})}}, {3, "b", {stats_of({3}), stats_of({-4, 0})}, {}}};
  r0.channels[0].effective_rank = 1.5;
  r0.histograms = {histogram_of({1, 2, -3}, "b", Site::kActivation), histogram_of({0.25}, "a", Site::kParamGrad)};
  r1.histograms = {histogram_of({0.25}, "a", Site::kParamGrad), histogram_of({2, INFINITY, 1e-30}, "b", Site::kActivation)};
  r0.pack(), r1.pack();
  ASSERT_EQ(r0.words.size(), r1.words.size());
  EXPECT_EQ(views_layout(r0.words.data()), views_layout(r1.words.data()));
  merge_views({r0.words.data(), r1.words.data()}, r0.channels, r0.histograms, r0.attention);

  ASSERT_EQ(r0.channels[0].node, "a");
  const Stats a0 = r0.channels[0].activation[0];
  EXPECT_EQ(a0.count, 3);
  EXPECT_EQ(a0.nan, 1);
  EXPECT_EQ(a0.sum, 12);
  EXPECT_EQ(a0.min, 5);
  EXPECT_EQ(r0.channels[0].output_grad[0].min, -2);
  EXPECT_EQ(r0.channels[0].output_grad[0].max, 0.5);
  const ChannelRecord& b = r0.channels[1];
  EXPECT_EQ(b.activation[0].count, 3);
  EXPECT_EQ(b.activation[0].sum, 6);
  EXPECT_EQ(b.activation[1].min, -4);
  EXPECT_EQ(b.activation[1].zero, 1);
  EXPECT_TRUE(b.output_grad.empty());
  EXPECT_EQ(b.effective_rank, 1.5);  // this rank's own: not mergeable from summaries

  // The parameter gradient with the same bits on both ranks counts once; "b"'s activation adds.
  ASSERT_EQ(r0.histograms[0].node, "a");
  EXPECT_EQ(r0.histograms[0].num, 1u);
  EXPECT_EQ(r0.histograms[0].sum, 0.25);
  const ElementHistogram& h = r0.histograms[1];
  const ElementHistogram want = [] {
    ElementHistogram x = histogram_of({1, 2, -3, 2, 1e-30}, "b", Site::kActivation);
    x.nonfinite = 1;
    return x;
  }();
  EXPECT_EQ(h.num, 5u);
  EXPECT_EQ(h.nonfinite, 1u);
  EXPECT_EQ(h.min, -3);
  EXPECT_EQ(h.max, 2);
  EXPECT_EQ(h.sum, want.sum);
  EXPECT_EQ(h.sum_squares, want.sum_squares);
  EXPECT_EQ(h.buckets, want.buckets);
  EXPECT_EQ(h.step, 3);
  EXPECT_EQ(h.site, Site::kActivation);
}

TEST(DistributedViews, ParameterGradientsThatDifferAreAddedAndOtherSitesNeverDeduplicated) {
  Rank r0, r1;
  for (Rank* r : {&r0, &r1})
    r->histograms = {histogram_of({0.5, -1}, "a", Site::kParamGrad), histogram_of({0.5, -1}, "a", Site::kOutputGrad)};
  r1.histograms[0] = histogram_of({0.5, -2}, "a", Site::kParamGrad);
  r0.pack(), r1.pack();
  merge_views({r0.words.data(), r1.words.data()}, r0.channels, r0.histograms, r0.attention);
  std::map<Site, ElementHistogram> by_site;
  for (const ElementHistogram& h : r0.histograms) by_site[h.site] = h;
  EXPECT_EQ(by_site[Site::kParamGrad].num, 4u);  // differ (no all-reduce): both count
  EXPECT_EQ(by_site[Site::kParamGrad].min, -2);
  EXPECT_EQ(by_site[Site::kOutputGrad].num, 4u);  // equal, but each rank saw its own samples
}

// A sharded node's gradient histograms add bin for bin even when the shards' bits agree.
TEST(DistributedViews, ShardedNodesAddParameterGradientHistogramsWithTheSameBits) {
  Rank r0, r1;
  for (Rank* r : {&r0, &r1})
    r->histograms = {histogram_of({0, 0.5, -1}, "a", Site::kParamGrad), histogram_of({0, 0.5, -1}, "b", Site::kParamGrad)};
  r0.pack(), r1.pack();
  merge_views({r0.words.data(), r1.words.data()}, r0.channels, r0.histograms, r0.attention,
              [](const std::string& node) { return node == "a"; });
  const ElementHistogram twice = [] {
    ElementHistogram x = histogram_of({0, 0.5, -1}, "a", Site::kParamGrad);
    merge_into(x, histogram_of({0, 0.5, -1}, "a", Site::kParamGrad));
    return x;
  }();
  ASSERT_EQ(r0.histograms[0].node, "a");
  EXPECT_EQ(r0.histograms[0].num, 6u);  // sharded: both halves
  EXPECT_EQ(r0.histograms[0].buckets, twice.buckets);
  EXPECT_EQ(r0.histograms[0].sum_squares, twice.sum_squares);
  EXPECT_EQ(r0.histograms[1].num, 3u);  // "b" replicated: once
}

// Tensor parallelism: each rank's heads are its own (concatenated in rank order); a record with
// the same bits on every rank (a replicated attention) is taken once, as are histograms.
TEST(DistributedViews, RanksThatShareTheBatchConcatenateSplitHeadsAndKeepReplicatedOnce) {
  const auto head = [](int64_t queries, double max_logit) {
    HeadStats h;
    h.queries = queries;
    h.max_logit = max_logit;
    return h;
  };
  Rank r0, r1;
  r0.attention = {{3, "a", {head(4, 1.0), head(4, 2.0)}}, {3, "b", {head(4, 7.0)}}};
  r1.attention = {{3, "a", {head(4, 3.0), head(4, 4.0)}}, {3, "b", {head(4, 7.0)}}};
  for (Rank* r : {&r0, &r1}) r->histograms = {histogram_of({0.5, -1}, "a", Site::kActivation)};
  r0.pack(), r1.pack();
  merge_views({r0.words.data(), r1.words.data()}, r0.channels, r0.histograms, r0.attention, nullptr,
              /*share_batch=*/true);
  ASSERT_EQ(r0.attention[0].heads.size(), 4u);  // "a": rank 0's two heads, then rank 1's
  EXPECT_EQ(r0.attention[0].heads[0].max_logit, 1.0);
  EXPECT_EQ(r0.attention[0].heads[2].max_logit, 3.0);
  EXPECT_EQ(r0.attention[0].heads[3].queries, 4);
  ASSERT_EQ(r0.attention[1].heads.size(), 1u);  // "b": the same bits, once
  EXPECT_EQ(r0.attention[1].heads[0].queries, 4);
  EXPECT_EQ(r0.histograms[0].num, 2u);          // a replicated activation, once
}

TEST(DistributedViews, LayoutNamesNodesChannelCountsAndSites) {
  const auto layout = [](std::vector<ChannelRecord> c, std::vector<ElementHistogram> h,
                          std::vector<AttentionRecord> a = {}) {
    return views_layout(pack_views(c, h, a, index_of).data());
  };
  const ChannelRecord two{0, "a", {Stats{}, Stats{}}, {}};
  const ChannelRecord three{0, "a", {Stats{}, Stats{}, Stats{}}, {}};
  const ChannelRecord other{0, "b", {Stats{}, Stats{}}, {}};
  const ElementHistogram act = histogram_of({1}, "a", Site::kActivation);
  const ElementHistogram grad = histogram_of({1}, "a", Site::kOutputGrad);
  EXPECT_EQ(layout({two}, {act}), layout({two}, {act}));
  EXPECT_NE(layout({two}, {act}), layout({three}, {act}));
  EXPECT_NE(layout({two}, {act}), layout({other}, {act}));
  EXPECT_NE(layout({two}, {act}), layout({two}, {grad}));
  EXPECT_NE(layout({two}, {}), layout({}, {}));
  // Attention: its node and head count.
  const AttentionRecord two_heads{0, "a", {HeadStats{}, HeadStats{}}}, one_head{0, "a", {HeadStats{}}};
  EXPECT_NE(layout({}, {}, {two_heads}), layout({}, {}, {one_head}));
  EXPECT_NE(layout({}, {}, {two_heads}), layout({}, {}, {AttentionRecord{0, "b", two_heads.heads}}));
  EXPECT_NE(layout({}, {}, {two_heads}), layout({}, {}));
  std::vector<ChannelRecord> none;
  std::vector<ElementHistogram> no_histograms;
  std::vector<AttentionRecord> no_attention;
  EXPECT_EQ(pack_views(none, no_histograms, no_attention, index_of).size(), 1u);  // the layout word only
}

TEST(DistributedViews, AttentionHeadsMergeAsHeadStatsDo) {
  Rank r0, r1;
  HeadStats a, b, c;
  a.queries = 4, a.fraction_queries = 3, a.top_queries = 1, a.max_logit = -2, a.entropy_sum = 1.5, a.entropy_fraction_sum = 0.75;
  b.queries = 2, b.fraction_queries = 2, b.top_queries = 2, b.max_logit = 7, b.entropy_sum = 0.25, b.entropy_fraction_sum = 0.5;
  c.queries = 1, c.nonfinite_queries = 3, c.max_logit = 1;
  r0.attention = {{5, "b", {a, c}}};
  r1.attention = {{5, "b", {b, HeadStats{}}}};
  r0.pack(), r1.pack();
  ASSERT_EQ(r0.words.size(), 1 + 2 * kHeadWords);
  merge_views({r0.words.data(), r1.words.data()}, r0.channels, r0.histograms, r0.attention);
  const HeadStats& h0 = r0.attention.at(0).heads.at(0);
  const HeadStats want = merge(a, b);
  EXPECT_EQ(h0.queries, 6);
  EXPECT_EQ(h0.fraction_queries, 5);
  EXPECT_EQ(h0.top_queries, 3);
  EXPECT_EQ(h0.max_logit, 7);
  EXPECT_EQ(h0.entropy_sum, want.entropy_sum);
  EXPECT_EQ(h0.entropy_fraction_sum, want.entropy_fraction_sum);
  const HeadStats& h1 = r0.attention[0].heads.at(1);  // the other rank counted no query
  EXPECT_EQ(h1.queries, 1);
  EXPECT_EQ(h1.nonfinite_queries, 3);
  EXPECT_EQ(h1.max_logit, 1);
}

// A field of kHeadStatsFields that the views forgot fails here, by name: one rank's heads come
// back as they went, two ranks' as merge() gives.
TEST(DistributedViews, EveryHeadFieldCrossesAndMerges) {
  const HeadStats a = gradscope::test::distinct_fields<HeadStats>(kHeadStatsFields);
  const HeadStats b = gradscope::test::distinct_fields<HeadStats>(kHeadStatsFields, 5000);
  Rank r0, r1;
  r0.attention = {{5, "b", {a}}};
  r1.attention = {{5, "b", {b}}};
  r0.pack(), r1.pack();
  std::vector<AttentionRecord> alone = r0.attention;
  merge_views({r0.words.data()}, r0.channels, r0.histograms, alone);
  gradscope::test::expect_fields_eq(alone.at(0).heads.at(0), a, kHeadStatsFields);
  merge_views({r0.words.data(), r1.words.data()}, r0.channels, r0.histograms, r0.attention);
  gradscope::test::expect_fields_eq(r0.attention.at(0).heads.at(0), merge(a, b), kHeadStatsFields);
}

}  // namespace
}  // namespace gradscope::torch::internal
