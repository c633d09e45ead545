// The audit's shared state. Hooks hold it weakly, so they go inert when the Audit is gone.
#pragma once

#include <ATen/core/Tensor.h>

#include <map>
#include <mutex>
#include <unordered_map>

#include "gradscope/torch/audit.h"

namespace gradscope::torch {

struct Audit::State {
  using ModulePtr = std::shared_ptr<::torch::nn::Module>;

  /// A node, a scoped submodule ("node/sub") or a free node (tap id without a module).
  struct Entry {
    std::string id;
    ModulePtr module;     // null for free nodes
    int parent = -1;      // index of the node, for submodules
    int sample_every = 1; // submodules: every N audited steps
    int64_t grad_order = -1;  // arrival of its first gradient in the first audited backward
    std::vector<std::size_t> params;  // indices into State::params
    // Gradient SNR state (opt-in): sum over steps of ||g||^2, and the step count.
    double snr_sq_sum = 0;
    int64_t snr_steps = 0;
  };
  struct Param {
    std::string name;
    at::Tensor tensor;
    int node = -1, sub = -1;
    at::Tensor snapshot;  // value before the optimizer step, reused across steps
    at::Tensor snr_sum;   // opt-in: sum over audited steps of the gradient (double)
  };

  AuditOptions options;
  StatsOptions stats_options;
  mutable std::mutex mutex;  // hooks may run on autograd worker threads
  std::vector<Entry> entries;
  std::unordered_map<std::string, int> by_id;
  std::unordered_map<const ::torch::nn::Module*, int> by_module;
  std::vector<Param> params;
  std::vector<std::pair<at::Tensor, unsigned>> order_hooks;  // removed after the first audited step

  int64_t step = 0;
  int64_t first_audited = -1;
  int64_t grad_counter = 0;
  std::vector<int> tap_sequence;  // execution order of tapped entries
  int last_tapped = -1;
  int64_t last_tapped_step = -1;
  std::vector<Record> records;
  std::size_t step_records_begin = 0;  // first record of the step being recorded
  std::vector<ChannelRecord> channel_records;
  std::vector<SimilarityRecord> similarity_records;
  std::map<int, ChannelRecord> pending_channels;  // this step's channel view, by entry
  std::map<int, at::Tensor> leakage_inputs;       // this step's branch activations, by entry
  std::vector<std::string> warnings;

  bool audited() const { return step % options.sample_every == 0; }
  int64_t audit_index() const { return step / options.sample_every; }
  bool entry_audited(const Entry& e) const {
    return audited() && audit_index() % e.sample_every == 0;
  }
  int add_entry(std::string id, ModulePtr module, int parent);
  void note_tap(int index);
  std::string unknown_id_message(const std::string& id) const;
};

}  // namespace gradscope::torch
