// RankMerge: the collectives. Every rank's step goes out as one flat int64 buffer through one
// allgather; each rank then merges all the buffers itself, in rank order.
//
// Why allgather and not all-reduce: Stats hold counts (sum), min and max and sums that must be
// combined the way merge() does, and the merge also needs per-rank facts an all-reduce loses
// (whether every rank holds the same parameter gradient, which rank saw NaN first, whether the
// ranks are at the same step). A step's buffer is small (112 bytes a node and site; a channel
// view adds 112 a channel, a histogram step about 12 KB a histogram), so the N
// copies cost latency, not bandwidth, and one collective carries everything. The buffer moves
// bytes, never arithmetic: doubles travel as their bits, so the merge is the one merge() a
// single process would do.
#include "gradscope/torch/distributed.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cstring>

#include "gradscope/core/error.h"
#include "distributed_views.h"
#include "distributed_wire.h"

namespace gradscope::torch {

using internal::kHeaderWords;
using internal::kMagic;
using internal::kSlotSites;
using internal::kSlotWords;

JobInfo job_info(const ProcessGroupPtr& group) {
  JobInfo job;
  if (!group) return job;
  job.rank = group->getRank();
  job.world_size = group->getSize();
  job.backend = group->getBackendName();
  return job;
}

RankMerge::RankMerge(ProcessGroupPtr group, std::string who, std::vector<std::string> nodes,
                     std::vector<std::string> descriptions)
    : group_(std::move(group)), who_(std::move(who)), nodes_(std::move(nodes)),
      descriptions_(std::move(descriptions)) {
  if (!group_) throw Error(who_ + ": process_group is null");
  GRADSCOPE_INTERNAL_ASSERT(nodes_.size() == descriptions_.size());
  job_ = job_info(group_);
  for (std::size_t i = 0; i < nodes_.size(); ++i) index_.emplace(nodes_[i], static_cast<int>(i));
  // Checked now, while every rank is constructing: before the first step, a rank with another
  // model would already disagree with the others in its own gradient all-reduce.
  check_nodes();
}

std::vector<at::Tensor> allgather_buffer(const ProcessGroupPtr& group, const at::Tensor& mine,
                                         const std::string& who, const std::string& what) {
  const JobInfo job = job_info(group);
  std::vector<std::vector<at::Tensor>> out(1);
  for (int r = 0; r < job.world_size; ++r) out[0].push_back(at::empty_like(mine));
  std::vector<at::Tensor> in{mine};
  try {
    group->allgather(out, in)->wait();
  } catch (const std::exception& e) {
    // Gloo reports a dead peer at once ("connection closed by peer") and a stalled one when the
    // group's timeout passes; either way this rank cannot go on with the job's statistics.
    throw Error(who + ": rank " + std::to_string(job.rank) + " of " + std::to_string(job.world_size) + " (" +
                job.backend + "): " + what + " failed; a rank died or stalled past the process group's timeout: " +
                e.what());
  }
  return std::move(out[0]);
}

std::vector<at::Tensor> RankMerge::gather(const at::Tensor& mine, const std::string& what) const {
  return allgather_buffer(group_, mine, who_, what);
}

void RankMerge::check_nodes() {
  const uint64_t hash = internal::hash_nodes(nodes_, descriptions_);
  at::Tensor mine = at::empty({kHeaderWords}, at::kLong);
  int64_t* w = mine.data_ptr<int64_t>();
  w[0] = kMagic;
  w[1] = static_cast<int64_t>(hash);
  w[2] = static_cast<int64_t>(nodes_.size());
  const std::vector<at::Tensor> all = gather(mine, "the node check");
  bool same = true;
  for (const at::Tensor& t : all) same = same && std::memcmp(t.data_ptr(), mine.data_ptr(), sizeof(int64_t) * kHeaderWords) == 0;
  if (same) return;
  // They differ: exchange the descriptions themselves (lengths first, so the sizes agree) and
  // name the difference. Every rank sees every description, so every rank throws the same.
  const std::string text = internal::join_nodes(nodes_, descriptions_);
  at::Tensor length = at::full({1}, static_cast<int64_t>(text.size()), at::kLong);
  int64_t longest = 0;
  for (const at::Tensor& t : gather(length, "the node check")) longest = std::max(longest, t.item<int64_t>());
  at::Tensor bytes = at::zeros({longest + 1}, at::kByte);
  std::memcpy(bytes.data_ptr(), text.data(), text.size());
  std::vector<std::string> texts;
  for (const at::Tensor& t : gather(bytes, "the node check"))
    texts.emplace_back(reinterpret_cast<const char*>(t.data_ptr()));
  throw Error(who_ + ": ranks disagree on the nodes: " + internal::describe_difference(texts));
}

void RankMerge::merge(StepRecords& step) {
  const std::size_t slots = nodes_.size() * kSlotSites;
  // Channel views and element histograms ride after the slots, in the same collective.
  const std::vector<int64_t> views = internal::pack_views(step.channels, step.histograms, [&](const std::string& node) {
    const auto it = index_.find(node);
    if (it == index_.end()) throw Error(who_ + ": node '" + node + "' (channel view or histogram) cannot be merged across ranks");
    return it->second;
  });
  const std::size_t views_at = kHeaderWords + slots * kSlotWords;
  at::Tensor mine = at::zeros({static_cast<int64_t>(views_at + views.size())}, at::kLong);
  int64_t* w = mine.data_ptr<int64_t>();
  w[0] = kMagic;
  w[1] = step.step;
  w[2] = static_cast<int64_t>(slots);
  // This rank's records, merged per (node, site) slot; order keeps their first appearance.
  std::vector<Stats> local(slots);
  std::vector<char> present(slots, 0);
  std::vector<std::size_t> order;
  std::vector<Record> late;  // of an earlier step (a backward run after step()): kept local
  for (Record& r : step.records) {
    if (r.step != step.step) {
      late.push_back(std::move(r));
      continue;
    }
    const auto it = index_.find(r.node);
    const auto site = static_cast<std::size_t>(r.site);
    if (it == index_.end() || site >= kSlotSites)
      throw Error(who_ + ": node '" + r.node + "' (" + site_name(r.site) + ") cannot be merged across ranks");
    const std::size_t slot = static_cast<std::size_t>(it->second) * kSlotSites + site;
    local[slot] = present[slot] ? gradscope::merge(local[slot], r.stats) : r.stats;
    if (!present[slot]) order.push_back(slot);
    present[slot] = 1;
  }
  for (std::size_t slot = 0; slot < slots; ++slot)
    if (present[slot]) internal::pack(local[slot], w + kHeaderWords + slot * kSlotWords);
  std::copy(views.begin(), views.end(), w + views_at);

  const std::vector<at::Tensor> all = gather(mine, "the merge of step " + std::to_string(step.step));
  std::vector<const int64_t*> ranks;
  std::string steps;
  bool same_step = true;
  for (int r = 0; r < job_.world_size; ++r) {
    const int64_t* b = all[static_cast<std::size_t>(r)].data_ptr<int64_t>();
    GRADSCOPE_INTERNAL_ASSERT(b[0] == kMagic && b[2] == static_cast<int64_t>(slots));
    same_step = same_step && b[1] == step.step;
    steps += (r ? ", rank " : "rank ") + std::to_string(r) + " at step " + std::to_string(b[1]);
    ranks.push_back(b + kHeaderWords);
  }
  if (!same_step)
    throw Error(who_ + ": ranks are at different steps (" + steps +
                "); every rank needs the same sample_every and one step() per training step");
  std::vector<const int64_t*> rank_views;
  for (const int64_t* r : ranks) {
    rank_views.push_back(r + slots * kSlotWords);
    if (internal::views_layout(rank_views.back()) != internal::views_layout(views.data()))
      throw Error(who_ + ": ranks disagree on the channel views or element histograms of step " +
                  std::to_string(step.step) + " (rank " + std::to_string(rank_views.size() - 1) +
                  " measured other nodes or channel counts than rank " + std::to_string(job_.rank) +
                  "); every rank needs the same options and the same channel counts");
  }
  internal::merge_views(rank_views, step.channels, step.histograms);

  std::vector<Record> merged;
  merged.reserve(order.size());
  std::vector<char> emitted(slots, 0);
  const auto emit = [&](std::size_t slot) {
    Stats out;
    const bool any = internal::merge_slot(ranks, slot, static_cast<Site>(slot % kSlotSites), out);
    if (!any) return;
    merged.push_back({step.step, nodes_[slot / kSlotSites], static_cast<Site>(slot % kSlotSites), out});
    emitted[slot] = 1;
  };
  for (std::size_t slot : order) emit(slot);
  for (std::size_t slot = 0; slot < slots; ++slot)
    if (!emitted[slot]) emit(slot);

  // Where NaN/Inf began: the first step any rank saw one; there, the lowest rank per slot.
  if (nonfinite_step_ < 0) {
    std::vector<int> first(slots, -1);
    bool any = false;
    for (std::size_t slot = 0; slot < slots; ++slot)
      for (int r = 0; r < job_.world_size && first[slot] < 0; ++r)
        if (internal::has_nonfinite(ranks[static_cast<std::size_t>(r)] + slot * kSlotWords)) {
          first[slot] = r;
          any = true;
        }
    if (any) {
      nonfinite_step_ = step.step;
      nonfinite_rank_ = std::move(first);
    }
  }
  for (Record& r : late) merged.push_back(std::move(r));
  step.records = std::move(merged);
}

int RankMerge::nonfinite_rank(int64_t step, const std::string& node, Site site) const {
  const auto it = index_.find(node);
  const auto s = static_cast<std::size_t>(site);
  if (step != nonfinite_step_ || it == index_.end() || s >= kSlotSites) return -1;
  return nonfinite_rank_[static_cast<std::size_t>(it->second) * kSlotSites + s];
}

}  // namespace gradscope::torch
