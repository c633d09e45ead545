#include "bpr_sampler.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "gradscope/core/error.h"

namespace gradscope::scenarios {
namespace {

// A number as people write it: 2, 1.9, 1e-06.
std::string text(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

}  // namespace

void check_faults(const MfFaults& f, int64_t items) {
  if (!(f.oscillate_factor >= 0 && f.oscillate_factor < 2))
    throw Error("fault oscillate_factor " + text(f.oscillate_factor) +
                ": must be in [0, 2) (past 2 the rows grow without bound)");
  if (f.oscillate_every < 1) throw Error("fault oscillate_every " + std::to_string(f.oscillate_every) + ": must be >= 1");
  if (f.negatives_from_top < 0 || f.negatives_from_top > items)
    throw Error("fault negatives_from_top " + std::to_string(f.negatives_from_top) + ": must be in [0, " +
                std::to_string(items) + "] (the items)");
  if (f.unsampled_items < 0 || f.unsampled_items >= items)
    throw Error("fault unsampled_items " + std::to_string(f.unsampled_items) + ": must be in [0, " +
                std::to_string(items) + ") (the items)");
}

BprSampler::BprSampler(const Interactions& d, const MfFaults& f, int64_t batch, uint64_t seed)
    : batch_(batch), negative_range_(d.items - f.unsampled_items),
      gen_(at::detail::createCPUGenerator(seed)) {
  check_faults(f, d.items);
  if (batch < 1) throw Error("batch " + std::to_string(batch) + ": must be >= 1");
  std::vector<int64_t> u, i;
  for (const auto& [user, item] : d.train)
    if (item < negative_range_) u.push_back(user), i.push_back(item);
  pairs_ = static_cast<int64_t>(u.size());
  if (pairs_ == 0) throw Error("interactions '" + d.name + "': no training pair left to sample");
  users_ = at::tensor(u);
  items_ = at::tensor(i);
  if (f.negatives_from_top > 0) {
    std::vector<int64_t> order = items_by_popularity(d);
    order.resize(f.negatives_from_top);
    negative_pool_ = at::tensor(order);
  }
}

std::vector<BprBatch> BprSampler::epoch() {
  const at::Tensor perm = at::randperm(pairs_, gen_, at::kLong);
  std::vector<BprBatch> out;
  for (int64_t b = 0; b < pairs_; b += batch_) {
    const at::Tensor idx = perm.slice(0, b, std::min(pairs_, b + batch_));
    BprBatch batch{users_.index_select(0, idx), items_.index_select(0, idx), {}};
    if (negative_pool_.defined())
      batch.negatives = negative_pool_.index_select(
          0, at::randint(0, negative_pool_.size(0), {idx.size(0)}, gen_, at::kLong));
    else
      batch.negatives = at::randint(0, negative_range_, {idx.size(0)}, gen_, at::kLong);
    out.push_back(std::move(batch));
  }
  return out;
}

}  // namespace gradscope::scenarios
