#include "audit/step_ring.h"

#include <utility>

namespace gradscope::torch::internal {

void clear_step(StepRecords& step) {
  step.step = 0;
  step.records.clear();
  step.channels.clear();
  step.similarities.clear();
  step.histograms.clear();
  step.attention.clear();
  step.scalars.clear();
}

void StepRing::push(StepRecords& step) {
  if (capacity_ == 0 || slots_.size() < capacity_) {
    slots_.emplace_back();
    std::swap(slots_.back(), step);
  } else {
    // Full: the oldest slot takes the new step; its old buffers go back to the caller, whose
    // vectors keep their capacity, so a steady run allocates nothing here.
    std::swap(slots_[first_], step);
    first_ = (first_ + 1) % capacity_;
  }
  clear_step(step);
}

const StepRecords& StepRing::newest() const {
  if (capacity_ == 0 || slots_.size() < capacity_) return slots_.back();
  return slots_[(first_ + capacity_ - 1) % capacity_];
}

}  // namespace gradscope::torch::internal
