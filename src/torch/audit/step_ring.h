// The records of the last N audited steps, so records() stays bounded on long runs: a full
// ring hands its oldest step's buffers back for reuse instead of growing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gradscope/core/audit/run_sink.h"

namespace gradscope::torch::internal {

/// Empties `step`'s lists, keeping their capacity for the next step.
void clear_step(StepRecords& step);

class StepRing {
 public:
  /// Keeps the last `capacity` steps; 0 keeps every step (unbounded).
  explicit StepRing(std::size_t capacity = 0) : capacity_(capacity) {}

  /// Takes `step` in; `step` comes back cleared (with the dropped step's capacity when full).
  void push(StepRecords& step);
  /// The step pushed last; valid until the next push. The ring must not be empty.
  const StepRecords& newest() const;
  /// Kept steps, oldest first.
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < slots_.size(); ++i) f(slots_[(first_ + i) % slots_.size()]);
  }

 private:
  std::size_t capacity_;
  std::size_t first_ = 0;  // index of the oldest step once the ring is full
  std::vector<StepRecords> slots_;
};

}  // namespace gradscope::torch::internal
