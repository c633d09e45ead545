// Audit: nodes and scopes, taps (activations and output gradients), and the audit's views.
// The per-step parameter measurements are in audit_step.cpp.
#include "gradscope/torch/audit.h"

#include <algorithm>
#include <iostream>
#include <limits>
#include <thread>
#include <tuple>

#include <c10/util/Exception.h>
#include <torch/nn/modules/activation.h>

#include "audit_state.h"
#include "channel_math.h"
#include "gradscope/core/error.h"
#include "gradscope/core/rules.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {
namespace {

using ModulePtr = std::shared_ptr<::torch::nn::Module>;

bool squashes(const ::torch::nn::Module& m) {
  return dynamic_cast<const ::torch::nn::TanhImpl*>(&m) || dynamic_cast<const ::torch::nn::SigmoidImpl*>(&m) ||
         dynamic_cast<const ::torch::nn::HardtanhImpl*>(&m) || dynamic_cast<const ::torch::nn::SoftsignImpl*>(&m);
}

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

void init_nodes(Audit::State& s, const std::vector<std::pair<std::string, ModulePtr>>& nodes) {
  const AuditOptions& o = s.options;
  o.thresholds.validate();
  if (o.sample_every < 1) throw Error("audit: sample_every must be >= 1");
  if (o.leakage_every < 1) throw Error("audit: leakage_every must be >= 1");
  if (o.threads < 0) throw Error("audit: threads must be >= 0");
  if (o.keep_steps < 0) throw Error("audit: keep_steps must be >= 0");
  s.judged = ReportBuilder(o.thresholds);
  s.kept = internal::StepRing(static_cast<std::size_t>(o.keep_steps));
  s.stats_options = o.thresholds.stats_options(
      o.threads > 0 ? o.threads : std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
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
    for (const std::string& id : {a, b})
      if (!s.by_id.count(id)) throw Error("audit: leakage pair names " + s.unknown_id_message(id));
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

// A channel view has to fit the tensor its node taps (LibTorch's movedim and narrow would
// throw their own errors, with a backtrace, deep inside the audit), and keep its channel count:
// the rules add channels up across steps, as each step ends.
void check_channel_view(const Audit::State::Entry& entry, const ChannelView& view, const at::Tensor& x) {
  const std::string& id = entry.id;
  const std::string who = "audit: channel view of '" + id + "': ";
  const int64_t dim = view.dim < 0 ? view.dim + x.dim() : view.dim;
  if (dim < 0 || dim >= x.dim())
    throw Error(who + "dim " + std::to_string(view.dim) + " out of range for a tensor with " +
                std::to_string(x.dim()) + " dims");
  if (entry.channels > 0 && x.size(dim) > 0 && x.size(dim) != entry.channels)  // 0: nothing to add
    throw Error(who + std::to_string(x.size(dim)) + " channels, but " + std::to_string(entry.channels) +
                " at an earlier sampled step; a channel view needs one channel count");
  for (const auto& [begin, end] : view.groups)
    if (end > x.size(dim))
      throw Error(who + "group [" + std::to_string(begin) + ", " + std::to_string(end) + ") out of range for " +
                  std::to_string(x.size(dim)) + " channels");
}

// Branches compared for LEAKAGE are paired sample by sample, so both need the same first
// dimension; checked when the second one is tapped, while the caller can still see why.
void check_leakage_input(const Audit::State& s, const std::string& id, const at::Tensor& x) {
  const std::string who = "audit: tap: node '" + id + "': ";
  if (x.dim() == 0) throw Error(who + "a leakage pair needs a tensor with a sample dimension, got a scalar");
  for (const auto& [a, b] : s.options.leakage_pairs) {
    if (a != id && b != id) continue;
    const std::string& other = a == id ? b : a;
    const auto it = s.leakage_inputs.find(s.by_id.at(other));
    if (it != s.leakage_inputs.end() && it->second.size(0) != x.size(0))
      throw Error(who + std::to_string(x.size(0)) + " samples, but '" + other + "' (its leakage pair) had " +
                  std::to_string(it->second.size(0)) + " at this step");
  }
}

}  // namespace

void Audit::State::note_tap(int index) {
  // A node tapped for the first time (at any step) goes right after the node tapped before
  // it in this step, so late or conditional nodes land next to their neighbours.
  if (std::find(tap_sequence.begin(), tap_sequence.end(), index) == tap_sequence.end()) {
    auto at = tap_sequence.begin();
    if (last_tapped_step == step && last_tapped >= 0)
      at = std::find(tap_sequence.begin(), tap_sequence.end(), last_tapped) + 1;
    tap_sequence.insert(at, index);
  }
  last_tapped = index;
  last_tapped_step = step;
}

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
  install_order_hooks(state_);
}

Audit::Audit(std::vector<std::pair<std::string, std::shared_ptr<::torch::nn::Module>>> nodes,
             AuditOptions options)
    : state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  init_nodes(*state_, nodes);
  install_order_hooks(state_);
}

Audit::~Audit() {
  std::lock_guard<std::mutex> lock(state_->mutex);
  for (auto& [tensor, handle] : state_->order_hooks) tensor.remove_hook(handle);
  state_->order_hooks.clear();
}

at::Tensor Audit::tap(const ::torch::nn::Module& module, const at::Tensor& x) {
  const auto it = state_->by_module.find(&module);
  if (it == state_->by_module.end())
    throw Error("audit: module of type " + module.name() + " is not an audited node or submodule");
  return tap(state_->entries[static_cast<std::size_t>(it->second)].id, x);
}

at::Tensor Audit::tap(const std::string& id, const at::Tensor& x) {
  State& s = *state_;
  const auto found = s.by_id.find(id);
  if (found == s.by_id.end()) throw Error("audit: tap: " + s.unknown_id_message(id));
  if (!x.defined()) throw Error("audit: tap: node '" + id + "': undefined tensor");
  const int index = found->second;
  State::Entry& entry = s.entries[static_cast<std::size_t>(index)];
  if (!s.entry_audited(entry)) return x;

  const int64_t step = s.step;
  const AuditOptions& o = s.options;
  const auto view = o.channels.find(id);
  const bool channel_step = view != o.channels.end() && s.audit_index() % view->second.every == 0;
  bool leakage_step = false;
  for (const auto& [a, b] : o.leakage_pairs) leakage_step |= (a == id || b == id);
  leakage_step &= s.audit_index() % o.leakage_every == 0;
  // Every check before anything is recorded: a tap that throws leaves no trace.
  if (channel_step) check_channel_view(entry, view->second, x);
  if (leakage_step) {
    std::lock_guard<std::mutex> lock(s.mutex);
    check_leakage_input(s, id, x);
  }
  Stats stats = stats_of(x.detach(), id, s.stats_options);
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.first_audited < 0) s.first_audited = step;
    s.note_tap(index);
    s.current.records.push_back({step, id, Site::kActivation, stats});
    if (channel_step) {
      ChannelRecord& c = s.pending_channels[index];
      c.step = step;
      c.node = id;
      c.activation = internal::per_channel_stats(x, view->second.dim, s.stats_options);
      if (!c.activation.empty()) entry.channels = static_cast<int64_t>(c.activation.size());
      c.effective_rank = internal::effective_rank(x, view->second.dim);
      const auto& groups = view->second.groups;
      for (std::size_t i = 0; i < groups.size(); ++i)
        for (std::size_t j = i + 1; j < groups.size(); ++j) {
          auto slice = [&](const std::pair<int64_t, int64_t>& g) {
            return x.detach().narrow(view->second.dim, g.first, g.second - g.first).movedim(view->second.dim, 1);
          };
          auto name = [&](const std::pair<int64_t, int64_t>& g) {
            return id + "[" + std::to_string(g.first) + ":" + std::to_string(g.second) + "]";
          };
          s.current.similarities.push_back(
              {step, id, name(groups[i]) + " vs " + name(groups[j]),
               internal::linear_cka(slice(groups[i]), slice(groups[j]))});
        }
    }
    if (leakage_step) s.leakage_inputs[index] = x.detach().clone();
  }

  if (x.requires_grad()) {
    std::weak_ptr<State> weak = state_;
    const int64_t dim = channel_step ? view->second.dim : 0;
    x.register_hook([weak, index, id, step, channel_step, dim](const at::Tensor& grad) {
      auto state = weak.lock();
      if (!state || !grad.defined()) return;
      Stats g = stats_of(grad, id + " output gradient", state->stats_options);
      std::vector<Stats> per_channel;
      if (channel_step) per_channel = internal::per_channel_stats(grad, dim, state->stats_options);
      std::lock_guard<std::mutex> lock(state->mutex);
      state->current.records.push_back({step, id, Site::kOutputGrad, g});
      if (channel_step) {
        auto& c = state->pending_channels[index];
        if (c.output_grad.empty()) c.output_grad = std::move(per_channel);
        else
          for (std::size_t i = 0; i < per_channel.size() && i < c.output_grad.size(); ++i)
            c.output_grad[i] = merge(c.output_grad[i], per_channel[i]);
      }
    });
  }
  return x;
}

void Audit::record_pre_activation(const std::string& id, const at::Tensor& x) {
  State& s = *state_;
  const auto found = s.by_id.find(id);
  if (found == s.by_id.end()) throw Error("audit: pre-activation: " + s.unknown_id_message(id));
  if (!x.defined()) throw Error("audit: pre-activation: node '" + id + "': undefined tensor");
  if (!s.entry_audited(s.entries[static_cast<std::size_t>(found->second)])) return;
  const Stats pre = stats_of(x.detach(), id, s.stats_options);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.current.records.push_back({s.step, id, Site::kPreActivation, pre});
}

at::Tensor Audit::forward(::torch::nn::SequentialImpl& sequential, at::Tensor x) {
  State& s = *state_;
  if (!x.defined()) throw Error("audit: forward: undefined input");
  const auto children = sequential.named_children();
  std::size_t i = 0;
  int current = -1;  // the audited child whose group is running
  for (auto it = sequential.begin(); it != sequential.end(); ++it, ++i) {
    try {
      x = it->forward(x);
    } catch (const c10::Error& e) {  // the user's model failed: say which child, no backtrace
      throw Error("audit: forward: child '" + children[i].key() + "' (" + children[i].value()->name() + "): " + e.msg());
    }
    const bool last = i + 1 == children.size();
    const bool next_audited = !last && s.by_module.count(children[i + 1].value().get());
    const auto found = s.by_module.find(children[i].value().get());
    if (found != s.by_module.end()) {
      current = found->second;
      // The group goes on into a squashing function: keep the module's own output, whose
      // magnitude is what saturates tanh or sigmoid (SATURATED). After ReLU and the like the
      // group's output already shows it, so that pass is skipped.
      if (!last && !next_audited && squashes(*children[i + 1].value()))
        record_pre_activation(s.entries[static_cast<std::size_t>(current)].id, x);
    }
    // Tap at the end of a group: before the next audited child, or at the end.
    if (current >= 0 && (next_audited || last)) {
      x = tap(s.entries[static_cast<std::size_t>(current)].id, x);
      current = -1;
    }
  }
  return x;
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
  std::lock_guard<std::mutex> lock(state_->mutex);
  return state_->warnings;
}

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
