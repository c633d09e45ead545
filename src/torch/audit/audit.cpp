// Audit: nodes and scopes, execution order, and the audit's views of them. Taps are in
// tap.cpp, forward() in forward.cpp, the per-step parameter measurements in
// step.cpp, what a step's end does with its records in records.cpp.
#include "gradscope/torch/audit/audit.h"

#include <algorithm>
#include <iostream>
#include <limits>
#include <thread>
#include <tuple>

#include "audit/state.h"
#include "gradscope/core/error.h"
#include "gradscope/core/audit/rules.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {
namespace {

using ModulePtr = std::shared_ptr<::torch::nn::Module>;

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

// Parameters held as shards (FSDP2, tensor parallelism): each names an audited parameter, and
// its node (and submodule) merge their parameter sites as sums (docs/distributed.md).
void init_shards(Audit::State& s) {
  if (s.options.ranks_share_batch && !s.options.process_group)
    throw Error("audit: ranks_share_batch needs a process_group: it says how the ranks' records merge");
  const auto& shards = s.options.parameter_shards;
  if (shards.empty()) return;
  if (!s.options.process_group)
    throw Error("audit: parameter_shards needs a process_group: a shard's statistics are the parameter's only "
                "once merged with the other ranks'");
  for (const auto& [name, shard] : shards) {
    Audit::State::Param* found = nullptr;
    for (Audit::State::Param& p : s.params)
      if (p.name == name) found = &p;
    if (!found) {
      std::string names;
      for (std::size_t i = 0; i < s.params.size() && i < 8; ++i) names += (i ? ", '" : "'") + s.params[i].name + "'";
      throw Error("audit: parameter_shards names '" + name + "', which is no audited parameter (parameters: " +
                  names + (s.params.size() > 8 ? ", ..." : "") + ")");
    }
    for (int64_t d : shard.shape)
      if (d < 0) throw Error("audit: parameter_shards: '" + name + "' has a negative dimension in its shape");
    found->shard = true;
    found->counted = shard.counted;
    found->whole_shape = shard.shape;
    s.entries[static_cast<std::size_t>(found->node)].sharded = true;
    if (found->sub >= 0) s.entries[static_cast<std::size_t>(found->sub)].sharded = true;
  }
}

void init_nodes(Audit::State& s, const std::vector<std::pair<std::string, ModulePtr>>& nodes) {
  const AuditOptions& o = s.options;
  o.thresholds.validate();
  if (o.sample_every < 1) throw Error("audit: sample_every must be >= 1");
  if (o.leakage_every < 1) throw Error("audit: leakage_every must be >= 1");
  if (o.histogram_every < 0) throw Error("audit: histogram_every must be >= 0 (0: no histograms)");
  if (o.attention_every < 0) throw Error("audit: attention_every must be >= 0 (0: no attention statistics)");
  if (o.threads < 0) throw Error("audit: threads must be >= 0");
  if (o.keep_steps < 0) throw Error("audit: keep_steps must be >= 0");
  s.judged = ReportBuilder(o.thresholds);
  s.kept = internal::StepRing(static_cast<std::size_t>(o.keep_steps));
  s.stats_options = o.thresholds.stats_options(
      o.threads > 0 ? o.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
  s.batch = internal::AtenStatsBatch(s.stats_options);
  for (const auto& [id, module] : nodes) {
    if (!module) throw Error("audit: node '" + id + "' has no module");
    if (s.by_id.count(id)) throw Error("audit: node id '" + id + "' given twice");
    const int node = s.add_entry(id, module, -1);
    // Scope precedence: per call > registered for the type > auto.
    NodeScope scope;
    if (auto it = o.scopes.find(id); it != o.scopes.end()) scope = it->second;
    else if (const NodeScope* registered = internal::registered_scope(*module)) scope = *registered;
    int truncated = 0;
    const std::vector<ScopedModule> subs = resolve_scope(*module, scope, truncated);
    if (truncated > 0) {
      s.warnings.push_back("node '" + id + "': scope matched " + std::to_string(subs.size() + truncated) +
                           " submodules, kept the first " + std::to_string(subs.size()) +
                           " (max_modules)");
      std::cerr << "gradscope: warning: " << s.warnings.back() << "\n";
    }
    std::vector<std::pair<std::string, int>> sub_paths;
    for (const auto& [path, sub] : subs) {
      const int e = s.add_entry(id + "/" + path, sub, node);
      s.entries[static_cast<std::size_t>(e)].sample_every = scope.sample_every;
      sub_paths.emplace_back(path + ".", e);
    }
    for (const auto& p : module->named_parameters(/*recurse=*/true)) {
      Audit::State::Param param;
      param.name = id + "." + p.key();
      param.grad_name = param.name + ".grad";
      param.update_name = param.name + " update";
      param.before_name = param.name + " before the step";
      param.tensor = p.value();
      param.node = node;
      std::size_t longest = 0;  // the most specific submodule owns the parameter
      for (const auto& [prefix, e] : sub_paths)
        if (prefix.size() > longest && p.key().compare(0, prefix.size(), prefix) == 0) {
          param.sub = e;
          longest = prefix.size();
        }
      s.entries[static_cast<std::size_t>(node)].params.push_back(s.params.size());
      if (param.sub >= 0) s.entries[static_cast<std::size_t>(param.sub)].params.push_back(s.params.size());
      s.params.push_back(std::move(param));
    }
  }
  // A scope for an id that is no node would silently scope nothing (a typo, or a submodule
  // path where the node's id belongs).
  for (const auto& [id, scope] : o.scopes) {
    const auto it = s.by_id.find(id);
    if (it != s.by_id.end() && s.entries[static_cast<std::size_t>(it->second)].parent < 0) continue;
    std::string nodes;
    for (const auto& e : s.entries)
      if (e.parent < 0) nodes += (nodes.empty() ? "'" : ", '") + e.id + "'";
    throw Error("audit: scope for unknown node id '" + id +
                "' (scopes are keyed by node id; nodes: " + nodes + ")");
  }
  for (const std::string& id : o.free_nodes) {
    if (s.by_id.count(id)) throw Error("audit: free node '" + id + "' is also a module node");
    s.add_entry(id, nullptr, -1);
  }
  if (o.channels_all_nodes)
    for (const auto& e : s.entries)
      if (e.parent < 0 && e.module && !o.channels.count(e.id)) s.options.channels[e.id] = *o.channels_all_nodes;
  for (const auto& [id, view] : o.channels) {
    if (!s.by_id.count(id)) throw Error("audit: channel view for " + s.unknown_id_message(id));
    if (view.every < 1) throw Error("audit: channel view of '" + id + "': every must be >= 1");
    for (const auto& [begin, end] : view.groups)
      if (begin < 0 || begin >= end)
        throw Error("audit: channel view of '" + id + "': group [" + std::to_string(begin) + ", " +
                    std::to_string(end) + ") is empty");
  }
  for (const auto& [a, b] : o.leakage_pairs)
    for (const std::string& id : {a, b}) {
      if (!s.by_id.count(id)) throw Error("audit: leakage pair names " + s.unknown_id_message(id));
      s.entries[static_cast<std::size_t>(s.by_id.at(id))].leakage = true;
    }
  for (auto& [id, view] : s.options.channels) s.entries[static_cast<std::size_t>(s.by_id.at(id))].channel_view = &view;
  for (Audit::State::Entry& e : s.entries) e.grad_name = e.id + " output gradient";
  init_shards(s);
}

// Execution order is learnt from the first audited backward: gradients reach parameters in
// reverse execution order. One hook per node, removed after that step.
void install_order_hooks(const std::shared_ptr<Audit::State>& s) {
  std::weak_ptr<Audit::State> weak = s;
  for (std::size_t e = 0; e < s->entries.size(); ++e) {
    if (s->entries[e].parent >= 0) continue;
    for (std::size_t pi : s->entries[e].params) {
      at::Tensor& t = s->params[pi].tensor;
      if (!t.requires_grad()) continue;
      const unsigned handle = t.register_hook([weak, e](const at::Tensor&) {
        auto state = weak.lock();
        if (!state) return;
        std::lock_guard<std::mutex> lock(state->mutex);
        auto& entry = state->entries[e];
        if (state->first_audited < 0 && state->audited()) state->first_audited = state->step;
        if (entry.grad_order < 0 && state->step == state->first_audited)
          entry.grad_order = state->grad_counter++;
      });
      s->order_hooks.emplace_back(t, handle);
      break;
    }
  }
}

}  // namespace

int Audit::State::add_entry(std::string id, ModulePtr module, int parent) {
  const int index = static_cast<int>(entries.size());
  if (!by_id.emplace(id, index).second) throw Error("audit: duplicate node id '" + id + "'");
  if (module) by_module.emplace(module.get(), index);
  Entry e;
  e.id = std::move(id);
  e.module = std::move(module);
  e.parent = parent;
  entries.push_back(std::move(e));
  return index;
}

std::string Audit::State::unknown_id_message(const std::string& id) const {
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const Entry& e : entries) near.emplace_back(edit_distance(id, e.id), e.id);
  std::sort(near.begin(), near.end());
  std::string msg = "unknown node id '" + id + "'";
  if (!near.empty()) {
    msg += "; nearest:";
    for (std::size_t i = 0; i < near.size() && i < 3; ++i) msg += (i ? ", '" : " '") + near[i].second + "'";
  }
  return msg + " (declare functional ops in AuditOptions::free_nodes)";
}

Audit::Audit(std::shared_ptr<::torch::nn::Module> model, AuditOptions options)
    : state_(std::make_shared<State>()) {
  if (!model) throw Error("audit: null model");
  state_->options = std::move(options);
  std::vector<std::pair<std::string, ModulePtr>> nodes;
  for (const auto& child : model->named_children())
    if (!child.value()->parameters(/*recurse=*/true).empty()) nodes.emplace_back(child.key(), child.value());
  if (nodes.empty()) nodes.emplace_back("model", model);
  init_nodes(*state_, nodes);
  state_->init_ranks();
  install_order_hooks(state_);
}

Audit::Audit(std::vector<std::pair<std::string, std::shared_ptr<::torch::nn::Module>>> nodes,
             AuditOptions options)
    : state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  init_nodes(*state_, nodes);
  state_->init_ranks();
  install_order_hooks(state_);
}

Audit::~Audit() {
  // A merge in flight (merge_async): wait for it, so that no rank's step is lost and no
  // collective outlives the audit. Gloo bounds the wait by the group's timeout when a rank is
  // gone; the error cannot be thrown from here, so it is written where a person sees it.
  try {
    state_->settle();
  } catch (const std::exception& e) {
    std::cerr << "gradscope: error: " << e.what() << " (in ~Audit: that step is not in the report or the run)\n";
  } catch (...) {
    std::cerr << "gradscope: error: ~Audit: the last step's merge failed\n";
  }
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (auto& [tensor, handle] : state_->order_hooks) tensor.remove_hook(handle);
  state_->order_hooks.clear();
}

int64_t Audit::current_step() const {
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->step;
}

std::vector<std::string> Audit::node_ids() const {
  const State& s = *state_;
  std::lock_guard<std::mutex> lock(s.mutex);
  // Top-level entries: tapped ones in tap order, then the rest in reverse gradient-arrival
  // order, then those never seen in registration order. Submodules follow their node.
  std::vector<int> top;
  for (std::size_t e = 0; e < s.entries.size(); ++e)
    if (s.entries[e].parent < 0) top.push_back(static_cast<int>(e));
  std::vector<int64_t> tap_position(s.entries.size(), -1);
  for (std::size_t i = 0; i < s.tap_sequence.size(); ++i)
    tap_position[static_cast<std::size_t>(s.tap_sequence[i])] = static_cast<int64_t>(i);
  auto key = [&](int e) {
    const State::Entry& x = s.entries[static_cast<std::size_t>(e)];
    if (tap_position[static_cast<std::size_t>(e)] >= 0)
      return std::make_tuple(0, tap_position[static_cast<std::size_t>(e)], e);
    if (x.grad_order >= 0) return std::make_tuple(1, -x.grad_order, e);
    return std::make_tuple(2, int64_t{0}, e);
  };
  std::stable_sort(top.begin(), top.end(), [&](int a, int b) { return key(a) < key(b); });
  std::vector<std::string> ids;
  for (int e : top) {
    ids.push_back(s.entries[static_cast<std::size_t>(e)].id);
    std::vector<int> subs;
    for (std::size_t c = 0; c < s.entries.size(); ++c)
      if (s.entries[c].parent == e) subs.push_back(static_cast<int>(c));
    std::stable_sort(subs.begin(), subs.end(), [&](int a, int b) { return key(a) < key(b); });
    for (int c : subs) ids.push_back(s.entries[static_cast<std::size_t>(c)].id);
  }
  return ids;
}

std::vector<std::string> Audit::warnings() const {
  state_->settle();  // its step's warnings too
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->warnings;
}

void Audit::flush() const { state_->settle(); }

Architecture Audit::architecture() const {
  Architecture a;
  const std::vector<std::string> ids = node_ids();
  std::lock_guard<std::mutex> lock(state_->mutex);
  const State& s = *state_;
  for (const std::string& id : ids) {
    const State::Entry& e = s.entries[static_cast<std::size_t>(s.by_id.at(id))];
    ArchitectureNode n;
    n.id = id;
    n.type = e.module ? e.module->name() : "free";
    const bool ran = e.grad_order >= 0 ||
                     std::find(s.tap_sequence.begin(), s.tap_sequence.end(), s.by_id.at(id)) != s.tap_sequence.end();
    n.order = ran ? static_cast<int64_t>(a.nodes.size()) : -1;
    for (std::size_t pi : e.params) {
      n.parameters += s.params[pi].tensor.numel();
      if (s.params[pi].tensor.requires_grad()) n.trainable += s.params[pi].tensor.numel();
    }
    a.nodes.push_back(std::move(n));
  }
  return a;
}

}  // namespace gradscope::torch
