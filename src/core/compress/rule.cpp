#include "gradscope/core/compress/rule.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>

#include "gradscope/core/error.h"

namespace gradscope::compress {
namespace {

constexpr Precision kLadder[] = {Precision::kFp32, Precision::kFp16, Precision::kInt8,
                                 Precision::kInt4, Precision::kInt3, Precision::kInt2};
constexpr int kLevels = static_cast<int>(sizeof kLadder / sizeof kLadder[0]);

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

// Per-element empirical Fisher of a node's parameters: the squared norm of the batch-mean
// gradient, per element, times the batch (a batch mean divides the per-sample variance by
// it; Kunstner et al. 2019 on what the empirical Fisher is and is not).
double fisher(const NodeProfile& p, const RuleOptions& o) {
  if (!o.use_fisher) return 1.0;
  if (!(p.grad_sq >= 0) || p.param_elements < 1 || p.batch < 1)
    throw Error("node '" + p.node + "': no parameter-gradient statistics in the run (the rule needs them)");
  return static_cast<double>(p.batch) * p.grad_sq / static_cast<double>(p.param_elements);
}

// Predicted loss increase of removing unit j: a gate on its output going from 1 to 0,
// 0.5 F_gate with F_gate = E[(dL_sample/dgate)^2] ~ batch^2 x positions x E[a^2] x E[delta^2] (delta the
// gradient of the batch-mean loss); Molchanov et al. 2019, "Importance estimation for neural
// network pruning", the squared Taylor term. Without saliency: 0.5 F sum w^2 (zeroing them).
double prune_cost(const NodeProfile& p, int64_t j, double f, const RuleOptions& o) {
  if (!o.use_unit_saliency) return 0.5 * f * p.weight_sq[j];
  if (!p.zero_frac.empty() && p.zero_frac[j] >= o.dead_frac) return 0.0;
  if (p.act_sq.empty() || p.out_grad_sq.empty() || p.batch < 1)
    throw Error("node '" + p.node + "': no per-unit activation and gradient statistics (channel view) in the run");
  const double b = static_cast<double>(p.batch);
  return 0.5 * b * b * static_cast<double>(std::max<int64_t>(1, p.positions)) * p.act_sq[j] * p.out_grad_sq[j];
}

// Quantisation noise of unit j with `inputs` kept input indices: uniform rounding error of
// step max|w| / qmax has variance step^2 / 12 per element; FP16 rounds to 11 significant bits.
double unit_noise(const NodeProfile& p, int64_t j, Precision prec, int64_t inputs) {
  const double share = static_cast<double>(inputs) / static_cast<double>(p.weight_shape.size() < 2 ? 1 : p.weight_shape[1]);
  switch (prec) {
    case Precision::kFp32: return 0.0;
    case Precision::kFp16: return p.weight_sq[j] * share * std::ldexp(1.0, -22) / 3.0;
    case Precision::kInt8:
    case Precision::kInt4:
    case Precision::kInt3:
    case Precision::kInt2: {
      const double step = p.max_abs[j] / quant_max(prec);
      return static_cast<double>(inputs * p.input_elements()) * step * step / 12.0;
    }
  }
  return 0.0;
}

struct Plan {
  const std::vector<NodeProfile>& nodes;
  const RuleOptions& o;
  std::vector<double> f;                // per-node Fisher
  std::vector<std::vector<int64_t>> order;  // units by prune cost, cheapest first
  std::vector<std::vector<double>> cost;    // prune cost per unit
  std::vector<int> level;               // index into kLadder
  std::vector<int64_t> pruned;          // the first `pruned` units of `order` are removed
  std::vector<int> prev;                // index of the node feeding this one, -1 none

  Plan(const std::vector<NodeProfile>& n, const RuleOptions& opt) : nodes(n), o(opt) {
    const std::size_t k = n.size();
    f.resize(k);
    order.resize(k);
    cost.resize(k);
    level.assign(k, 0);
    pruned.assign(k, 0);
    prev.assign(k, -1);
    for (std::size_t i = 0; i < k; ++i) {
      const NodeProfile& p = n[i];
      if (static_cast<int64_t>(p.max_abs.size()) != p.units() || static_cast<int64_t>(p.weight_sq.size()) != p.units())
        throw Error("node '" + p.node + "': no per-unit weight statistics (max |w|, sum w^2)");
      f[i] = fisher(p, o);
      for (std::size_t m = 0; m < k; ++m)
        if (n[m].next == p.node) prev[i] = static_cast<int>(m);
      if (prunable(i)) {
        cost[i].resize(p.units());
        for (int64_t j = 0; j < p.units(); ++j) cost[i][j] = prune_cost(p, j, f[i], o);
        order[i].resize(p.units());
        std::iota(order[i].begin(), order[i].end(), 0);
        std::stable_sort(order[i].begin(), order[i].end(), [&](int64_t a, int64_t b) { return cost[i][a] < cost[i][b]; });
        // Dead units cost nothing and save bytes: always pruned (down to min_units).
        if (o.use_unit_saliency && !p.zero_frac.empty())
          while (pruned[i] < p.units() - std::max<int64_t>(1, o.min_units) && p.zero_frac[order[i][pruned[i]]] >= o.dead_frac)
            ++pruned[i];
      }
    }
  }
  bool prunable(std::size_t i) const { return !nodes[i].next.empty() && nodes[i].next_fan > 0; }
  int64_t kept_inputs(std::size_t i) const {
    const NodeProfile& p = nodes[i];
    const int64_t inputs = p.weight_shape.size() < 2 ? 1 : p.weight_shape[1];
    return prev[i] < 0 ? inputs : inputs - pruned[prev[i]] * nodes[prev[i]].next_fan;
  }
  bool is_pruned(std::size_t i, int64_t j) const {
    for (int64_t k = 0; k < pruned[i]; ++k)
      if (order[i][k] == j) return true;
    return false;
  }
  int64_t bytes(std::size_t i) const {
    const NodeProfile& p = nodes[i];
    return node_bytes(p.weight_shape, p.bias, kLadder[level[i]], p.units() - pruned[i], kept_inputs(i));
  }
  // Predicted loss of node i: quantisation noise of its kept weights weighted by its Fisher,
  // plus the cost of its pruned units.
  double loss(std::size_t i) const {
    const NodeProfile& p = nodes[i];
    std::vector<char> gone(static_cast<std::size_t>(p.units()), 0);
    double l = 0.0;
    for (int64_t k = 0; k < pruned[i]; ++k) {
      gone[order[i][k]] = 1;
      l += cost[i][order[i][k]];
    }
    const int64_t inputs = kept_inputs(i);
    double noise = 0.0;
    for (int64_t j = 0; j < p.units(); ++j)
      if (!gone[j]) noise += unit_noise(p, j, kLadder[level[i]], inputs);
    return l + 0.5 * f[i] * noise;
  }
  int64_t total_bytes() const {
    int64_t b = 0;
    for (std::size_t i = 0; i < nodes.size(); ++i) b += bytes(i);
    return b;
  }
};

// One move: node i to another precision (any level: INT2 is not always the smallest, a scale
// costs 4 bytes), or one unit more (dir +1) or fewer (-1) pruned. d_bytes and d_loss are
// computed on the nodes it touches.
struct Move {
  std::size_t node = 0;
  bool prune = false;
  int dir = 1;    // prune moves
  int level = 0;  // precision moves: the new level
  int64_t d_bytes = 0;
  double d_loss = 0;
};

// Applies (or with undo, reverts) a move; returns what to pass to undo it.
Move shift(Plan& plan, const Move& m) {
  Move back = m;
  if (m.prune) {
    plan.pruned[m.node] += m.dir;
    back.dir = -m.dir;
  } else {
    back.level = plan.level[m.node];
    plan.level[m.node] = m.level;
  }
  return back;
}

Move evaluate(Plan& plan, Move m) {
  std::vector<std::size_t> touched{m.node};
  if (m.prune)
    for (std::size_t k = 0; k < plan.nodes.size(); ++k)
      if (plan.nodes[k].node == plan.nodes[m.node].next) touched.push_back(k);
  int64_t b0 = 0, b1 = 0;
  double l0 = 0, l1 = 0;
  for (std::size_t k : touched) b0 += plan.bytes(k), l0 += plan.loss(k);
  const Move back = shift(plan, m);
  for (std::size_t k : touched) b1 += plan.bytes(k), l1 += plan.loss(k);
  shift(plan, back);
  m.d_bytes = b1 - b0;
  m.d_loss = l1 - l0;
  return m;
}

// Every legal move: each node to each other precision, one unit more and one fewer pruned.
std::vector<Move> moves(Plan& plan) {
  std::vector<Move> out;
  for (std::size_t i = 0; i < plan.nodes.size(); ++i) {
    for (int level = 0; level < kLevels; ++level)
      if (level != plan.level[i]) out.push_back(evaluate(plan, Move{i, false, 0, level, 0, 0}));
    if (!plan.prunable(i)) continue;
    const int64_t keep = std::max<int64_t>(1, plan.o.min_units);
    if (plan.nodes[i].units() - plan.pruned[i] - 1 >= keep) out.push_back(evaluate(plan, Move{i, true, +1, 0, 0, 0}));
    if (plan.pruned[i] > 0) out.push_back(evaluate(plan, Move{i, true, -1, 0, 0, 0}));
  }
  return out;
}

// Greedy downward: the move that adds the least predicted loss per byte saved.
bool step_down(Plan& plan, double loss_room) {
  const std::vector<Move> all = moves(plan);
  const Move* best = nullptr;
  for (const Move& m : all) {
    if (m.d_bytes >= 0 || m.d_loss > loss_room) continue;
    if (!best || m.d_loss / -m.d_bytes < best->d_loss / -best->d_bytes) best = &m;
  }
  if (!best) return false;
  shift(plan, *best);
  return true;
}

// Greedy upward into leftover bytes: the move that removes the most predicted loss per byte.
bool step_up(Plan& plan, int64_t room) {
  const std::vector<Move> all = moves(plan);
  const Move* best = nullptr;
  for (const Move& m : all) {
    if (m.d_bytes <= 0 || m.d_bytes > room || !(m.d_loss < 0)) continue;
    if (!best || -m.d_loss / m.d_bytes > -best->d_loss / best->d_bytes) best = &m;
  }
  if (!best) return false;
  shift(plan, *best);
  return true;
}

std::string evidence_premise(const Plan& plan, std::size_t i, const std::vector<double>& fisher_rank) {
  const NodeProfile& p = plan.nodes[i];
  std::string s = std::to_string(p.units() * p.unit_elements()) + " weights in " + std::to_string(p.units()) + " units";
  if (plan.o.use_fisher)
    s += "; gradient energy per element " + num(plan.f[i]) + " (empirical Fisher over " + std::to_string(p.steps) +
         " steps, rank " + num(fisher_rank[i]) + " of " + std::to_string(plan.nodes.size()) + ", 1 = most sensitive)";
  if (p.update_ratio == p.update_ratio) s += "; update ratio " + num(p.update_ratio);
  if (!p.zero_frac.empty()) {
    int64_t dead = 0;
    for (double z : p.zero_frac) dead += z >= plan.o.dead_frac;
    s += "; " + std::to_string(dead) + " units dead (output zero in >= " + num(plan.o.dead_frac * 100) +
         "% of sampled activations)";
  }
  if (!plan.prunable(i)) s += "; units not prunable (no next node to shrink, e.g. the output)";
  return s;
}

}  // namespace

double predicted_loss(const NodeProfile& profile, const NodeDecision& decision, const RuleOptions& options) {
  const double f = fisher(profile, options);
  double l = 0.0;
  std::vector<char> gone(static_cast<std::size_t>(profile.units()), 0);
  for (int64_t j : decision.pruned_units) {
    gone[j] = 1;
    l += prune_cost(profile, j, f, options);
  }
  const int64_t inputs = (profile.weight_shape.size() < 2 ? 1 : profile.weight_shape[1]);
  for (int64_t j = 0; j < profile.units(); ++j)
    if (!gone[j]) l += 0.5 * f * unit_noise(profile, j, decision.precision, inputs);
  return l;
}

int64_t smallest_bytes(const std::vector<NodeProfile>& profiles, const RuleOptions& options) {
  check_profiles(profiles);
  std::vector<NodeDecision> d;
  for (const NodeProfile& p : profiles) {
    NodeDecision x;
    x.node = p.node;
    x.next = p.next;
    x.next_fan = p.next_fan;
    if (!p.next.empty() && p.next_fan > 0)
      for (int64_t j = std::max<int64_t>(1, options.min_units); j < p.units(); ++j) x.pruned_units.push_back(j);
    d.push_back(x);
  }
  int64_t total = 0;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    const NodeProfile& p = profiles[i];
    const int64_t inputs = p.weight_shape.size() < 2 ? 1 : p.weight_shape[1];
    int64_t least = std::numeric_limits<int64_t>::max();
    for (Precision prec : kLadder)  // INT2 is not always smallest: a scale costs 4 bytes
      least = std::min(least, node_bytes(p.weight_shape, p.bias, prec, p.units() - static_cast<int64_t>(d[i].pruned_units.size()),
                                         inputs - pruned_inputs(d, p.node)));
    total += least;
  }
  return total;
}

Recipe make_recipe(const std::vector<NodeProfile>& profiles, const Budget& budget, const RuleOptions& options) {
  check_profiles(profiles);
  const bool by_bytes = budget.max_bytes > 0, by_loss = std::isfinite(budget.max_loss);
  if (by_bytes == by_loss) throw Error("compression budget: give either a size in bytes (> 0) or a maximum loss");
  if (by_loss && budget.max_loss < 0) throw Error("compression budget: maximum loss " + num(budget.max_loss) + " is < 0");
  if (budget.max_bytes < 0) throw Error("compression budget: " + std::to_string(budget.max_bytes) + " bytes is < 0");
  if (by_bytes) {
    const int64_t least = smallest_bytes(profiles, options);
    if (budget.max_bytes < least)
      throw Error("budget of " + std::to_string(budget.max_bytes) + " bytes cannot be met: the smallest reachable size is " +
                  std::to_string(least) + " bytes (every node at its smallest precision, one unit left in each prunable node)");
  }
  Plan plan(profiles, options);
  if (by_bytes) {
    while (plan.total_bytes() > budget.max_bytes)
      if (!step_down(plan, std::numeric_limits<double>::infinity())) break;
    // Descent stops where no single move saves bytes; say so rather than hand back a recipe
    // over its budget.
    if (plan.total_bytes() > budget.max_bytes)
      throw Error("budget of " + std::to_string(budget.max_bytes) + " bytes: the rule stopped at " +
                  std::to_string(plan.total_bytes()) + " bytes, where no single move saves more");
    while (step_up(plan, budget.max_bytes - plan.total_bytes())) {
    }
  } else {
    for (;;) {
      double now = 0;
      for (std::size_t i = 0; i < profiles.size(); ++i) now += plan.loss(i);
      if (!step_down(plan, budget.max_loss - now)) break;
    }
  }

  std::vector<double> rank(profiles.size(), 1);
  for (std::size_t i = 0; i < profiles.size(); ++i)
    for (std::size_t k = 0; k < profiles.size(); ++k) rank[i] += plan.f[k] > plan.f[i];

  Recipe r = fp32_recipe(profiles);
  r.method = options.use_fisher && options.use_unit_saliency ? "dynamics"
             : options.use_fisher                           ? "dynamics-no-saliency"
             : options.use_unit_saliency                    ? "dynamics-no-fisher"
                                                            : "static";
  r.budget_bytes = budget.max_bytes;
  r.max_loss = budget.max_loss;
  for (std::size_t i = 0; i < profiles.size(); ++i) {
    const NodeProfile& p = profiles[i];
    NodeDecision& d = r.nodes[i];
    d.precision = kLadder[plan.level[i]];
    for (int64_t k = 0; k < plan.pruned[i]; ++k) d.pruned_units.push_back(plan.order[i][k]);
    std::sort(d.pruned_units.begin(), d.pruned_units.end());
    d.predicted_loss = plan.loss(i);
    d.premise = evidence_premise(plan, i, rank);
    d.action = std::string(precision_name(d.precision)) + " per output unit";
    if (!d.pruned_units.empty()) {
      int64_t dead = 0;
      for (int64_t j : d.pruned_units) dead += !p.zero_frac.empty() && p.zero_frac[j] >= options.dead_frac;
      d.action += ", prune " + std::to_string(d.pruned_units.size()) + " of " + std::to_string(p.units()) + " units (" +
                  std::to_string(dead) + " dead, the rest lowest " +
                  (options.use_unit_saliency ? "activation x gradient saliency" : "Fisher x weight energy") +
                  ") and the matching inputs of '" + p.next + "'";
    }
    r.predicted_loss += d.predicted_loss;
  }
  recompute_bytes(r);
  for (std::size_t i = 0; i < r.nodes.size(); ++i) {
    NodeDecision& d = r.nodes[i];
    const int64_t fp32 = node_bytes(d.weight_shape, d.bias, Precision::kFp32, profiles[i].units(),
                                    d.weight_shape.size() < 2 ? 1 : d.weight_shape[1]);
    d.expected_effect = std::to_string(fp32) + " -> " + std::to_string(d.bytes) +
                        " bytes; predicted loss increase " + num(d.predicted_loss) +
                        " nats (second-order estimate, docs/compression.md)";
  }
  return r;
}

RunDynamics::Node& RunDynamics::node(const std::string& name) {
  for (Node& n : nodes_)
    if (n.name == name) return n;
  nodes_.push_back(Node{name});
  return nodes_.back();
}

void RunDynamics::add(const Record& record) {
  if (record.site == Site::kParamGrad) {
    Node& n = node(record.node);
    n.grad_sq += record.stats.sum_sq;
    n.grad_steps += 1;
    n.elements = record.stats.count;
  } else if (record.site == Site::kUpdate || record.site == Site::kParam) {
    // update / param L2 per step, summed: the ratio of the means over steps.
    Node& n = node(record.node);
    if (record.site == Site::kUpdate) {
      n.update_l2 += record.stats.l2();
      n.update_steps += 1;
    } else {
      n.param_l2 += record.stats.l2();
    }
  }
}

void RunDynamics::fill(std::vector<NodeProfile>& profiles) const {
  for (NodeProfile& p : profiles)
    for (const Node& n : nodes_) {
      if (n.name != p.node) continue;
      if (n.grad_steps > 0) {
        p.grad_sq = n.grad_sq / static_cast<double>(n.grad_steps);
        p.param_elements = n.elements;
        p.steps = n.grad_steps;
      }
      if (n.update_steps > 0 && n.param_l2 > 0) p.update_ratio = n.update_l2 / n.param_l2;
    }
}

void add_run_dynamics(std::vector<NodeProfile>& profiles, const std::vector<Record>& records) {
  RunDynamics d;
  for (const Record& r : records) d.add(r);
  d.fill(profiles);
}

}  // namespace gradscope::compress
