// Audit: which forwards are training passes. Evaluation forwards (no gradients, or modules in
// eval mode) and paused ones record nothing; a forward that activation checkpointing runs again
// inside backward is recorded once: in the first forward when that one had gradients enabled
// (non-reentrant checkpointing), in the recomputation when it had not (reentrant
// checkpointing runs its first forward under no_grad and backpropagates the recomputation).
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/graph_task.h>

#include "audit/state.h"
#include "gradscope/core/error.h"

namespace gradscope::torch {
namespace {

// The autograd engine runs backward with its graph task current on the thread (GraphTaskGuard);
// outside backward there is none.
bool in_backward() { return ::torch::autograd::get_current_graph_task_exec_info() != nullptr; }

}  // namespace

bool Audit::State::training_pass(int index, bool consume) {
  const Entry& entry = entries[static_cast<std::size_t>(index)];
  const bool module_training = !entry.module || entry.module->is_training();
  std::lock_guard<std::mutex> lock(mutex);
  if (pause_depth > 0 || !module_training) return false;
  if (in_backward()) {
    const auto pending = no_grad_forwards.find(index);
    if (pending == no_grad_forwards.end() || pending->second == 0) return false;  // recorded already
    if (consume) --pending->second;
    return true;
  }
  if (!at::GradMode::is_enabled()) {
    if (consume) ++no_grad_forwards[index];
    return false;
  }
  return true;
}

void Audit::pause() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  ++state_->pause_depth;
}

void Audit::resume() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  if (state_->pause_depth == 0) throw Error("audit: resume() without a pause() before it");
  --state_->pause_depth;
}

bool Audit::paused() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->pause_depth > 0;
}

}  // namespace gradscope::torch
