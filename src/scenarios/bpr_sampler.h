// The BPR sampler of the matrix-factorisation run: each epoch, the training pairs in a new
// random order, cut into batches, and one negative item per positive, uniform over all items
// unless a sampler fault is planted (mf_faults.h).
//
//   BprSampler sampler(data, faults, 1024, seed);
//   for (const BprBatch& b : sampler.epoch()) train(b.users, b.positives, b.negatives);
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "interactions.h"
#include "mf_faults.h"

namespace gradscope::scenarios {

/// One batch: user, positive item and negative item of each example (int64, equal lengths).
struct BprBatch {
  at::Tensor users, positives, negatives;
};

class BprSampler {
 public:
  /// Samples `data`'s training pairs with the sampler faults of `faults`; `seed` fixes every
  /// draw. Throws Error when no training pair is left to draw or a fault does not fit.
  BprSampler(const Interactions& data, const MfFaults& faults, int64_t batch, uint64_t seed);
  /// Batches per epoch.
  int64_t batches() const { return (pairs_ + batch_ - 1) / batch_; }
  /// The next epoch's batches.
  std::vector<BprBatch> epoch();

 private:
  int64_t pairs_, batch_;
  at::Tensor users_, items_;      // the pairs the sampler can draw
  at::Tensor negative_pool_;      // the ids negatives come from (undefined: 0..items-1)
  int64_t negative_range_;        // ids 0..this-1 when the pool is undefined
  at::Generator gen_;
};

}  // namespace gradscope::scenarios
