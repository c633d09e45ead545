// RankMerge: the collectives. Every rank's step goes out as one flat int64 buffer through one
// allgather; each rank then merges all the buffers itself, in rank order. start() launches the
// allgather and finish() waits for it, so that the Audit can leave it in flight while the next
// step computes (AuditOptions::merge_async). At steps with channel views or histograms the
// views travel in a second allgather, sized by what every rank announced in the first.
//
// Why allgather and not all-reduce: Stats hold counts (sum), min and max and sums that must be
// combined the way merge() does, and the merge also needs per-rank facts an all-reduce loses
// (whether every rank holds the same parameter gradient, which rank saw NaN first, whether the
// ranks are at the same step). A step's buffer is small (112 bytes a node and site; a channel
// view adds 112 a channel, a histogram step about 12 KB a histogram), so the N
// copies cost latency, not bandwidth, and one collective carries a step (two with views). The buffer moves
// bytes, never arithmetic: doubles travel as their bits, so the merge is the one merge() a
// single process would do.
#include "gradscope/torch/distributed/rank_merge.h"

#include <ATen/Functions.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "gradscope/core/error.h"
#include "distributed/views.h"
#include "distributed/wire.h"

namespace gradscope::torch {

using internal::kHeaderWords;
using internal::kMagic;
using internal::kSlotSites;
using internal::kSlotWords;

namespace {

// Gloo reports a dead peer at once ("connection closed by peer") and a stalled one when the
// group's timeout passes; either way this rank cannot go on with the job's statistics.
Error gather_failed(const JobInfo& job, const std::string& who, const std::string& what, const std::exception& e) {
  return Error(who + ": rank " + std::to_string(job.rank) + " of " + std::to_string(job.world_size) + " (" +
               job.backend + "): " + what + " failed; a rank died or stalled past the process group's timeout: " +
               e.what());
}

// Starts one allgather of `in` (this rank's CPU buffer) into `out` (allocated here, one tensor a
// rank), both on the group's collective device.
c10::intrusive_ptr<c10d::Work> launch(const ProcessGroupPtr& group, std::vector<at::Tensor>& in,
                                      std::vector<std::vector<at::Tensor>>& out) {
  const c10::Device device = collective_device(group);
  for (at::Tensor& t : in) t = t.to(device);
  out.assign(1, {});
  for (int r = 0; r < group->getSize(); ++r) out[0].push_back(at::empty_like(in[0]));
  return group->allgather(out, in);
}

// Waits for `work`, then brings what it gathered into `out` to the CPU, where it is read.
void wait_to_cpu(const c10::intrusive_ptr<c10d::Work>& work, std::vector<at::Tensor>& out) {
  work->wait();
  for (at::Tensor& t : out) t = t.to(at::kCPU);
}

// "id: channels 8 activation, 8 output gradient; histograms activation, output_grad" lines, in
// the order pack_views() sorted them: what decides the views' layout, for an error message.
std::string views_text(const StepRecords& step) {
  std::vector<std::string> ids;
  std::map<std::string, std::string> text;
  const auto line = [&](const std::string& node) -> std::string& {
    if (!text.count(node)) ids.push_back(node);
    return text[node];
  };
  for (const ChannelRecord& c : step.channels)
    line(c.node) += "channels " + std::to_string(c.activation.size()) + " activation, " +
                    std::to_string(c.output_grad.size()) + " output gradient";
  for (const ElementHistogram& h : step.histograms) {
    std::string& l = line(h.node);
    l += l.find("histograms") == std::string::npos ? (l.empty() ? "histograms " : "; histograms ") : ", ";
    l += site_name(h.site);
  }
  for (const AttentionRecord& a : step.attention) {
    std::string& l = line(a.node);
    l += (l.empty() ? "attention " : "; attention ") + std::to_string(a.heads.size()) + " heads";
  }
  std::vector<std::string> descriptions;
  for (const std::string& id : ids) descriptions.push_back(text[id]);
  return internal::join_nodes(ids, descriptions);
}

}  // namespace

// A started merge: this rank's step and buffers, and the collectives in flight.
struct RankMerge::Pending {
  StepRecords step;                // this rank's; finish() replaces its records by the job's
  std::vector<std::size_t> order;  // slots in the order of their first record
  std::vector<Record> late;        // of an earlier step (a backward run after step()): kept local
  std::vector<at::Tensor> in, in_views;
  std::vector<std::vector<at::Tensor>> out, out_views;
  c10::intrusive_ptr<c10d::Work> work, work_views;
  bool waited = false;  // `work` already waited on (views step)
};

c10::Device collective_device(const ProcessGroupPtr& group) {
  // A group with no backends does its collectives itself (a ProcessGroup subclass that wraps
  // another): it is given what the caller has, CPU tensors.
  if (!group->hasBackends() || group->hasBackendForDeviceType(c10::DeviceType::CPU)) return at::kCPU;
  const std::vector<c10::Device> devices = group->getDeviceTypes();
  for (const c10::Device& d : devices)
    if (d.is_cuda()) return c10::Device(c10::DeviceType::CUDA);  // the current CUDA device
  GRADSCOPE_INTERNAL_ASSERT(!devices.empty());
  return c10::Device(devices.front().type());
}

JobInfo job_info(const ProcessGroupPtr& group) {
  JobInfo job;
  if (!group) return job;
  job.rank = group->getRank();
  job.world_size = group->getSize();
  job.backend = group->getBackendName();
  return job;
}

RankMerge::RankMerge(ProcessGroupPtr group, std::string who, std::vector<std::string> nodes,
                     std::vector<std::string> descriptions, std::vector<char> sharded, bool share_batch)
    : group_(std::move(group)), who_(std::move(who)), nodes_(std::move(nodes)),
      descriptions_(std::move(descriptions)), sharded_(std::move(sharded)), share_batch_(share_batch) {
  if (!group_) throw Error(who_ + ": process_group is null");
  GRADSCOPE_INTERNAL_ASSERT(nodes_.size() == descriptions_.size());
  if (sharded_.empty()) sharded_.assign(nodes_.size(), 0);
  GRADSCOPE_INTERNAL_ASSERT(sharded_.size() == nodes_.size());
  job_ = job_info(group_);
  for (std::size_t i = 0; i < nodes_.size(); ++i) index_.emplace(nodes_[i], static_cast<int>(i));
  // Checked now, while every rank is constructing: before the first step, a rank with another
  // model would already disagree with the others in its own gradient all-reduce.
  check_nodes();
}

// A pending Work holds its own tensors: dropping it unwaited leaves nothing dangling.
RankMerge::~RankMerge() = default;

std::vector<at::Tensor> allgather_buffer(const ProcessGroupPtr& group, const at::Tensor& mine,
                                         const std::string& who, const std::string& what) {
  std::vector<std::vector<at::Tensor>> out;
  std::vector<at::Tensor> in{mine};
  try {
    const c10::intrusive_ptr<c10d::Work> work = launch(group, in, out);  // fills `out` first
    wait_to_cpu(work, out[0]);
  } catch (const std::exception& e) {
    throw gather_failed(job_info(group), who, what, e);
  }
  return std::move(out[0]);
}

std::vector<at::Tensor> RankMerge::gather(const at::Tensor& mine, const std::string& what) const {
  return allgather_buffer(group_, mine, who_, what);
}

std::vector<std::string> allgather_text(const ProcessGroupPtr& group, const std::string& text,
                                        const std::string& who, const std::string& what) {
  // Lengths first, so that the sizes agree; every rank then sees every text.
  at::Tensor length = at::full({1}, static_cast<int64_t>(text.size()), at::kLong);
  int64_t longest = 0;
  for (const at::Tensor& t : allgather_buffer(group, length, who, what)) longest = std::max(longest, t.item<int64_t>());
  at::Tensor bytes = at::zeros({longest + 1}, at::kByte);
  std::memcpy(bytes.data_ptr(), text.data(), text.size());
  std::vector<std::string> texts;
  for (const at::Tensor& t : allgather_buffer(group, bytes, who, what))
    texts.emplace_back(reinterpret_cast<const char*>(t.data_ptr()));
  return texts;
}

std::vector<std::string> RankMerge::gather_texts(const std::string& text, const std::string& what) const {
  return allgather_text(group_, text, who_, what);
}

void RankMerge::check_nodes() {
  const uint64_t hash = internal::hash_nodes(nodes_, descriptions_);
  at::Tensor mine = at::zeros({kHeaderWords}, at::kLong);
  int64_t* w = mine.data_ptr<int64_t>();
  w[0] = kMagic;
  w[1] = static_cast<int64_t>(hash);
  w[2] = static_cast<int64_t>(nodes_.size());
  const std::vector<at::Tensor> all = gather(mine, "the node check");
  bool same = true;
  for (const at::Tensor& t : all) same = same && std::memcmp(t.data_ptr(), mine.data_ptr(), sizeof(int64_t) * kHeaderWords) == 0;
  if (same) return;
  // They differ: name the difference. Every rank sees every description, so every rank throws the same.
  const std::vector<std::string> texts = gather_texts(internal::join_nodes(nodes_, descriptions_), "the node check");
  throw Error(who_ + ": ranks disagree on the nodes: " + internal::describe_difference(texts));
}

namespace {

// Throws Error when the buffers (headers first) are of different steps.
void check_steps(const std::vector<at::Tensor>& all, int64_t step, std::size_t slots, const std::string& who) {
  std::string steps;
  bool same = true;
  for (std::size_t r = 0; r < all.size(); ++r) {
    const int64_t* b = all[r].data_ptr<int64_t>();
    GRADSCOPE_INTERNAL_ASSERT(b[0] == kMagic && b[2] == static_cast<int64_t>(slots));
    same = same && b[1] == step;
    steps += (r ? ", rank " : "rank ") + std::to_string(r) + " at step " + std::to_string(b[1]);
  }
  if (!same)
    throw Error(who + ": ranks are at different steps (" + steps +
                "); every rank needs the same sample_every and one step() per training step");
}

}  // namespace

void RankMerge::views_differ(const StepRecords& step) const {
  const std::string what = "the views check of step " + std::to_string(step.step);
  throw Error(who_ + ": ranks disagree on the channel views, element histograms or attention of step " +
              std::to_string(step.step) +
              ": " + internal::describe_difference(gather_texts(views_text(step), what)) +
              "; every rank needs the same options, the same channel counts and the same viewed nodes tapped");
}

void RankMerge::start(StepRecords step, bool views_step) {
  GRADSCOPE_INTERNAL_ASSERT(!pending_);
  auto p = std::make_unique<Pending>();
  const std::size_t slots = nodes_.size() * kSlotSites;
  const std::string what = "the merge of step " + std::to_string(step.step);
  // Channel views and element histograms: sorted and packed now, sent after the slots.
  std::vector<int64_t> views;
  if (views_step)
    views = internal::pack_views(step.channels, step.histograms, step.attention, [&](const std::string& node) {
      const auto it = index_.find(node);
      if (it == index_.end())
        throw Error(who_ + ": node '" + node + "' (channel view, histogram or attention) cannot be merged across ranks");
      return it->second;
    });
  at::Tensor mine = at::zeros({static_cast<int64_t>(kHeaderWords + slots * kSlotWords)}, at::kLong);
  int64_t* w = mine.data_ptr<int64_t>();
  w[0] = kMagic;
  w[1] = step.step;
  w[2] = static_cast<int64_t>(slots);
  w[3] = static_cast<int64_t>(views.size());
  w[4] = views.empty() ? 0 : internal::views_layout(views.data());
  // This rank's records, merged per (node, site) slot; order keeps their first appearance.
  std::vector<Stats> local(slots);
  std::vector<char> present(slots, 0);
  for (Record& r : step.records) {
    if (r.step != step.step) {
      p->late.push_back(std::move(r));
      continue;
    }
    const auto it = index_.find(r.node);
    const auto site = static_cast<std::size_t>(r.site);
    if (it == index_.end() || site >= kSlotSites)
      throw Error(who_ + ": node '" + r.node + "' (" + site_name(r.site) + ") cannot be merged across ranks");
    const std::size_t slot = static_cast<std::size_t>(it->second) * kSlotSites + site;
    local[slot] = present[slot] ? gradscope::merge(local[slot], r.stats) : r.stats;
    if (!present[slot]) p->order.push_back(slot);
    present[slot] = 1;
  }
  step.records.clear();
  for (std::size_t slot = 0; slot < slots; ++slot)
    if (present[slot]) internal::pack(local[slot], w + kHeaderWords + slot * kSlotWords);

  p->in = {mine};
  try {
    p->work = launch(group_, p->in, p->out);
    if (views_step) {
      // The views' sizes must agree before they travel: wait for the slots and headers now.
      wait_to_cpu(p->work, p->out[0]);
      p->waited = true;
    }
  } catch (const std::exception& e) {
    throw gather_failed(job_, who_, what, e);
  }
  if (views_step) {
    check_steps(p->out[0], step.step, slots, who_);
    for (const at::Tensor& t : p->out[0])
      if (std::memcmp(t.data_ptr<int64_t>() + 3, w + 3, 2 * sizeof(int64_t)) != 0) views_differ(step);
    if (views.size() > 1) {  // more than the layout hash: some channel view or histogram
      p->in_views = {at::from_blob(views.data(), {static_cast<int64_t>(views.size())}, at::kLong).clone()};
      try {
        p->work_views = launch(group_, p->in_views, p->out_views);
      } catch (const std::exception& e) {
        throw gather_failed(job_, who_, what, e);
      }
    }
  }
  p->step = std::move(step);
  pending_ = std::move(p);
}

StepRecords RankMerge::finish() {
  GRADSCOPE_INTERNAL_ASSERT(pending_);
  const std::unique_ptr<Pending> p = std::move(pending_);  // over, whatever happens below
  StepRecords& step = p->step;
  const std::size_t slots = nodes_.size() * kSlotSites;
  try {
    if (!p->waited) wait_to_cpu(p->work, p->out[0]);
    if (p->work_views) wait_to_cpu(p->work_views, p->out_views[0]);
  } catch (const std::exception& e) {
    throw gather_failed(job_, who_, "the merge of step " + std::to_string(step.step), e);
  }
  const std::vector<at::Tensor>& all = p->out[0];
  if (!p->waited) check_steps(all, step.step, slots, who_);
  std::vector<const int64_t*> ranks;
  for (const at::Tensor& t : all) ranks.push_back(t.data_ptr<int64_t>() + kHeaderWords);
  if (p->work_views) {
    std::vector<const int64_t*> rank_views;
    for (const at::Tensor& t : p->out_views[0]) rank_views.push_back(t.data_ptr<int64_t>());
    internal::merge_views(rank_views, step.channels, step.histograms, step.attention,
                          [&](const std::string& node) { return sharded_[static_cast<std::size_t>(index_.at(node))] != 0; },
                          share_batch_);
  }

  std::vector<Record> merged;
  merged.reserve(p->order.size());
  std::vector<char> emitted(slots, 0);
  const auto emit = [&](std::size_t slot) {
    Stats out;
    const bool any = internal::merge_slot(ranks, slot, static_cast<Site>(slot % kSlotSites), out,
                                          sharded_[slot / kSlotSites] != 0, share_batch_);
    if (!any) return;
    merged.push_back({step.step, nodes_[slot / kSlotSites], static_cast<Site>(slot % kSlotSites), out});
    emitted[slot] = 1;
  };
  for (std::size_t slot : p->order) emit(slot);
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
  for (Record& r : p->late) merged.push_back(std::move(r));
  step.records = std::move(merged);
  return std::move(step);
}

void RankMerge::merge(StepRecords& step, bool views_step) {
  start(std::move(step), views_step);
  step = finish();
}

int RankMerge::nonfinite_rank(int64_t step, const std::string& node, Site site) const {
  const auto it = index_.find(node);
  const auto s = static_cast<std::size_t>(site);
  if (step != nonfinite_step_ || it == index_.end() || s >= kSlotSites) return -1;
  return nonfinite_rank_[static_cast<std::size_t>(it->second) * kSlotSites + s];
}

}  // namespace gradscope::torch
