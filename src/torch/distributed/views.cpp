// Channel views and element histograms in and out of RankMerge's buffer, and their merge.
#include "distributed/views.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "distributed/wire.h"

namespace gradscope::torch::internal {
namespace {

constexpr std::size_t kHistogramHead = 6;

void pack_histogram(const ElementHistogram& h, int64_t* w) {
  w[0] = static_cast<int64_t>(h.num), w[1] = static_cast<int64_t>(h.nonfinite);
  w[2] = double_bits(h.min), w[3] = double_bits(h.max), w[4] = double_bits(h.sum), w[5] = double_bits(h.sum_squares);
  for (const auto& [bucket, count] : h.buckets) w[kHistogramHead + bucket] = static_cast<int64_t>(count);
}

ElementHistogram unpack_histogram(const int64_t* w, const ElementHistogram& like) {
  ElementHistogram h;
  h.step = like.step, h.node = like.node, h.site = like.site;
  h.num = static_cast<uint64_t>(w[0]), h.nonfinite = static_cast<uint64_t>(w[1]);
  h.min = bits_double(w[2]), h.max = bits_double(w[3]), h.sum = bits_double(w[4]), h.sum_squares = bits_double(w[5]);
  for (std::size_t b = 0; b + kHistogramHead < histogram_words(); ++b)
    if (w[kHistogramHead + b] != 0) h.buckets.emplace_back(static_cast<uint32_t>(b), static_cast<uint64_t>(w[kHistogramHead + b]));
  return h;
}

// Merges n Stats of kSlotWords each at `offset` of every rank into `out`, with merge_slot
// (sample-side sites: every rank's counts).
void merge_stats(const std::vector<const int64_t*>& ranks, std::size_t offset, std::vector<Stats>& out) {
  std::vector<const int64_t*> at(ranks.size());
  for (std::size_t r = 0; r < ranks.size(); ++r) at[r] = ranks[r] + offset;
  for (std::size_t i = 0; i < out.size(); ++i) merge_slot(at, i, Site::kActivation, out[i]);
}

}  // namespace

std::size_t histogram_words() { return kHistogramHead + histogram_bucket_limits().size(); }

std::vector<int64_t> pack_views(std::vector<ChannelRecord>& channels, std::vector<ElementHistogram>& histograms,
                                std::vector<AttentionRecord>& attention,
                                const std::function<int(const std::string&)>& node_index) {
  std::stable_sort(attention.begin(), attention.end(), [&](const AttentionRecord& a, const AttentionRecord& b) {
    return node_index(a.node) < node_index(b.node);
  });
  std::stable_sort(channels.begin(), channels.end(), [&](const ChannelRecord& a, const ChannelRecord& b) {
    return node_index(a.node) < node_index(b.node);
  });
  std::stable_sort(histograms.begin(), histograms.end(), [&](const ElementHistogram& a, const ElementHistogram& b) {
    return std::make_tuple(node_index(a.node), static_cast<int>(a.site)) <
           std::make_tuple(node_index(b.node), static_cast<int>(b.site));
  });
  // The layout, FNV-1a over what decides where each word goes: ranks whose layouts differ
  // would merge one node's channels with another's.
  uint64_t hash = 1469598103934665603ull;
  const auto add = [&](int64_t x) { hash = (hash ^ static_cast<uint64_t>(x)) * 1099511628211ull; };
  std::size_t words = 1;
  for (const ChannelRecord& c : channels) {
    add(node_index(c.node)), add(static_cast<int64_t>(c.activation.size())), add(static_cast<int64_t>(c.output_grad.size()));
    words += (c.activation.size() + c.output_grad.size()) * kSlotWords;
  }
  add(-1);  // channels end here
  for (const ElementHistogram& h : histograms) add(node_index(h.node)), add(static_cast<int64_t>(h.site));
  words += histograms.size() * histogram_words();
  add(-2);  // histograms end here
  for (const AttentionRecord& a : attention) {
    add(node_index(a.node)), add(static_cast<int64_t>(a.heads.size()));
    words += a.heads.size() * kHeadWords;
  }

  std::vector<int64_t> out(words, 0);
  out[0] = static_cast<int64_t>(hash);
  int64_t* w = out.data() + 1;
  for (const ChannelRecord& c : channels) {
    for (const Stats& s : c.activation) pack(s, w), w += kSlotWords;
    for (const Stats& s : c.output_grad) pack(s, w), w += kSlotWords;
  }
  for (const ElementHistogram& h : histograms) pack_histogram(h, w), w += histogram_words();
  for (const AttentionRecord& a : attention)
    for (const HeadStats& h : a.heads) pack_fields<kHeadStatsFields>(h, w), w += kHeadWords;
  return out;
}

namespace {

bool same_everywhere(const std::vector<const int64_t*>& ranks, std::size_t offset, std::size_t words) {
  for (const int64_t* r : ranks)
    if (std::memcmp(r + offset, ranks.front() + offset, words * sizeof(int64_t)) != 0) return false;
  return true;
}

}  // namespace

void merge_views(const std::vector<const int64_t*>& ranks, std::vector<ChannelRecord>& channels,
                 std::vector<ElementHistogram>& histograms, std::vector<AttentionRecord>& attention,
                 const std::function<bool(const std::string& node)>& sharded, bool share_batch) {
  std::size_t offset = 1;
  for (ChannelRecord& c : channels) {
    merge_stats(ranks, offset, c.activation);
    offset += c.activation.size() * kSlotWords;
    merge_stats(ranks, offset, c.output_grad);
    offset += c.output_grad.size() * kSlotWords;
  }
  const std::size_t n = histogram_words();
  for (ElementHistogram& h : histograms) {
    // One tensor held N times counts once (the rule of merge_slot): averaged gradients, and
    // the replicated outputs of ranks that share the batch.
    const bool once_when_same = h.site == Site::kParamGrad ? !(sharded && sharded(h.node)) : share_batch;
    if (once_when_same && same_everywhere(ranks, offset, n)) {
      h = unpack_histogram(ranks.front() + offset, h);
    } else {
      ElementHistogram merged = unpack_histogram(ranks.front() + offset, h);
      for (std::size_t r = 1; r < ranks.size(); ++r) merge_into(merged, unpack_histogram(ranks[r] + offset, h));
      h = std::move(merged);
    }
    offset += n;
  }
  for (AttentionRecord& a : attention) {
    const std::size_t heads = a.heads.size();
    if (share_batch) {
      // The same samples everywhere: heads with the same bits were not split; else each rank
      // holds its own heads, in rank order.
      const bool same = same_everywhere(ranks, offset, heads * kHeadWords);
      a.heads.clear();
      for (std::size_t r = 0; r < (same ? 1 : ranks.size()); ++r)
        for (std::size_t h = 0; h < heads; ++h)
          a.heads.push_back(unpack_fields<kHeadStatsFields>(ranks[r] + offset + h * kHeadWords));
    } else {
      for (std::size_t h = 0; h < heads; ++h) {
        HeadStats merged;
        for (const int64_t* r : ranks) merged = merge(merged, unpack_fields<kHeadStatsFields>(r + offset + h * kHeadWords));
        a.heads[h] = merged;
      }
    }
    offset += heads * kHeadWords;
  }
}

}  // namespace gradscope::torch::internal
