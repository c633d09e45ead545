// The second part of RankMerge's buffer: a step's channel views (per-channel Stats), element
// histograms and attention records (per-head HeadStats), packed after the Stats slots so that one allgather still carries the
// whole step. No LibTorch here: tested without processes (tests/torch/distributed_views_test.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gradscope/core/attention/rules.h"
#include "gradscope/core/audit/channels.h"
#include "gradscope/core/audit/element_histogram.h"

namespace gradscope::torch::internal {

/// Words of one histogram: num, nonfinite, min, max, sum, sum of squares, then one count per
/// bucket of histogram_bucket_limits() (dense, so every rank's layout is the same).
std::size_t histogram_words();

/// Words of one attention head: one a field of kHeadStatsFields (wire.h's pack_fields).
inline constexpr std::size_t kHeadWords = kHeadStatsFields.size();

/// Sorts `channels` and `attention` by node and `histograms` by (node, site) with
/// `node_index` (the order every rank packs and merges in) and returns their words: a hash of
/// the layout (nodes, channel counts, histogram sites, attention heads), then every channel
/// record's Stats (activation, then output gradient, kSlotWords each), then every histogram,
/// then every attention record's heads.
std::vector<int64_t> pack_views(std::vector<ChannelRecord>& channels, std::vector<ElementHistogram>& histograms,
                                std::vector<AttentionRecord>& attention,
                                const std::function<int(const std::string&)>& node_index);

/// The layout hash pack_views() wrote first.
inline int64_t views_layout(const int64_t* views) { return views[0]; }

/// Replaces `channels` and `histograms` (as sorted and packed by pack_views) by their merge
/// over every rank's views (`ranks[r]` points at rank r's first view word; every layout the
/// same): per-channel Stats merged in rank order, histogram counts, sums, min and max combined;
/// a parameter-gradient histogram with the same bits on every rank (after a gradient
/// all-reduce) is taken once, unless `sharded` says its node's parameters are shards (then
/// every rank's counts add); with `share_batch` (every rank runs the same samples) the other
/// sites' histograms too are taken once when every rank's has the same bits. Effective ranks pass through: they are not mergeable from
/// summaries (spectra.h merges them). Attention heads merge as HeadStats do (counts and sums
/// add, the largest logit is the largest of any rank's): each rank saw its own batch rows.
/// With `share_batch`, a record with the same bits on every rank is taken once (the heads were
/// not split) and otherwise its heads are concatenated in rank order (head h of rank r is head
/// r x n + h of n heads a rank: tensor parallelism splits them).
void merge_views(const std::vector<const int64_t*>& ranks, std::vector<ChannelRecord>& channels,
                 std::vector<ElementHistogram>& histograms, std::vector<AttentionRecord>& attention,
                 const std::function<bool(const std::string& node)>& sharded = nullptr, bool share_batch = false);

}  // namespace gradscope::torch::internal
