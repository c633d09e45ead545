#include "gradscope/core/audit/depth.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>

namespace gradscope {
namespace {

// A node's place in a stack: "blocks.3.attn/qkv" -> stack "blocks", block 3, block name
// "blocks.3". The first path component that is a number names the block.
struct Place {
  std::string stack, block;
  int64_t index = -1;
};

std::optional<Place> place_of(const std::string& node) {
  std::size_t begin = 0;
  while (begin < node.size()) {
    std::size_t end = node.find_first_of("./", begin);
    if (end == std::string::npos) end = node.size();
    const bool number = end > begin && end - begin <= 9 &&
                        std::all_of(node.begin() + static_cast<std::ptrdiff_t>(begin),
                                    node.begin() + static_cast<std::ptrdiff_t>(end),
                                    [](unsigned char c) { return std::isdigit(c) != 0; });
    if (number && begin > 0) return Place{node.substr(0, begin - 1), node.substr(0, end), std::stoll(node.substr(begin, end - begin))};
    begin = end + 1;
  }
  return std::nullopt;
}

// A block's gradient L2 per step: the root of the sum of squares of its nodes' values, at the
// steps where every one of them has a value.
std::map<int64_t, double> block_gradient(const std::vector<const NodeGradients*>& nodes) {
  std::map<int64_t, std::pair<double, std::size_t>> sums;
  for (const NodeGradients* n : nodes)
    for (const auto& [step, l2] : *n->grad) {
      auto& [sum, count] = sums[step];
      sum += l2 * l2;
      ++count;
    }
  std::map<int64_t, double> out;
  for (const auto& [step, sc] : sums)
    if (sc.second == nodes.size()) out[step] = std::sqrt(sc.first);
  return out;
}

}  // namespace

bool node_inside(const std::string& inner, const std::string& outer) {
  return inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0 &&
         (inner[outer.size()] == '.' || inner[outer.size()] == '/');
}

std::optional<DepthImbalance> find_depth_imbalance(const std::vector<NodeGradients>& nodes, const SeriesReport& series,
                                                   const Thresholds& t) {
  if (series.diverged() || !series.loss_stalled(t.plateau_fall)) return std::nullopt;
  // stack -> block index -> (block name, its outermost nodes); stacks in order of appearance.
  std::vector<std::string> stacks;
  std::map<std::string, std::map<int64_t, std::pair<std::string, std::vector<const NodeGradients*>>>> by_stack;
  for (const NodeGradients& n : nodes) {
    if (n.grad == nullptr || n.grad->empty()) continue;
    const bool nested = std::any_of(nodes.begin(), nodes.end(), [&](const NodeGradients& o) {
      return o.grad && !o.grad->empty() && node_inside(n.node, o.node);
    });
    if (nested) continue;
    const std::optional<Place> p = place_of(n.node);
    if (!p) continue;
    if (!by_stack.count(p->stack)) stacks.push_back(p->stack);
    auto& block = by_stack[p->stack][p->index];
    block.first = p->block;
    block.second.push_back(&n);
  }
  for (const std::string& stack : stacks) {
    const auto& blocks = by_stack[stack];
    if (blocks.size() < 3) continue;
    const auto& first = blocks.begin()->second;
    const auto& last = blocks.rbegin()->second;
    const std::map<int64_t, double> low = block_gradient(first.second), high = block_gradient(last.second);
    // The ratio at the steps both blocks have, in step order.
    std::vector<std::pair<int64_t, double>> ratio;
    for (const auto& [step, g0] : low) {
      const auto it = high.find(step);
      if (it != high.end() && g0 > 0 && std::isfinite(g0) && std::isfinite(it->second))
        ratio.emplace_back(step, it->second / g0);
    }
    // The imbalance must grow in training, as it does in a post-LN stack (near 1 at the first
    // step, 100-1000x within 5-20 Adam steps). A profile steep from the first step (a deep
    // tanh or sigmoid MLP: 1,900x at initialisation) is the architecture's, and a stall there
    // has other causes (a learning rate too small, labels without signal: measured).
    if (ratio.empty() || !(ratio.front().second < t.depth_grad_ratio / kDepthStartFactor)) continue;
    const std::size_t w = static_cast<std::size_t>(t.depth_window);
    DepthImbalance d;
    for (std::size_t i = 0; i + w <= ratio.size(); ++i) {
      double floor = std::numeric_limits<double>::infinity();
      for (std::size_t j = i; j < i + w; ++j) floor = std::min(floor, ratio[j].second);
      if (floor > d.ratio) d.ratio = floor;
      if (floor > t.depth_grad_ratio && d.since < 0) d.since = ratio[i].first;
    }
    if (d.since < 0) continue;
    d.stack = stack;
    d.blocks = static_cast<int64_t>(blocks.size());
    d.first_block = first.first;
    d.last_block = last.first;
    for (const NodeGradients* n : first.second) d.first_nodes.push_back(n->node);
    d.early_loss = series.early_loss_level;
    d.late_loss = series.late_loss_mean;
    return d;
  }
  return std::nullopt;
}

}  // namespace gradscope
