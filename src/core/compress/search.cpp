#include "gradscope/core/compress/search.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <string>

#include "gradscope/core/error.h"

namespace gradscope::compress {
namespace {

std::string num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.4g", v);
  return b;
}

// Two budgets often give the same decisions; a recipe is measured once.
std::string key(const Recipe& r) {
  std::string k;
  for (const NodeDecision& d : r.nodes) {
    k += d.node + ':' + precision_name(d.precision);
    for (int64_t j : d.pruned_units) k += ',' + std::to_string(j);
    k += ';';
  }
  return k;
}

}  // namespace

MeasuredSearch search_max_loss(const std::vector<NodeProfile>& profiles, double max_loss, const MeasureLoss& measure,
                               const SearchOptions& options) {
  if (!std::isfinite(max_loss) || max_loss < 0)
    throw Error("measured maximum loss " + num(max_loss) + ": give a finite number >= 0");
  if (options.max_probes < 2) throw Error("measured maximum loss: max_probes " + std::to_string(options.max_probes) + " is < 2");
  const int64_t least = smallest_bytes(profiles, options.rule);
  const int64_t fp32 = fp32_recipe(profiles).bytes;

  MeasuredSearch s;
  s.max_loss = max_loss;
  std::map<std::string, double> seen;
  auto probe = [&](int64_t budget) {
    Recipe r = make_recipe(profiles, Budget::bytes(budget), options.rule);
    const std::string k = key(r);
    auto it = seen.find(k);
    double loss = 0;
    if (it != seen.end()) {
      loss = it->second;
    } else {
      loss = measure(r);
      if (std::isnan(loss))
        throw Error("measured maximum loss: the validation measurement of a " + std::to_string(r.bytes) + "-byte recipe is NaN");
      seen.emplace(k, loss);
    }
    s.probes.push_back(Probe{budget, r.bytes, loss});
    return std::make_pair(std::move(r), loss);
  };

  auto [small, small_loss] = probe(least);
  if (small_loss <= max_loss) {
    s.recipe = std::move(small);
    s.loss = small_loss;
    s.reached_smallest = true;
    return s;
  }
  auto [pass, pass_loss] = probe(std::max(fp32, least));
  if (pass_loss > max_loss)
    throw Error("measured maximum loss " + num(max_loss) + ": the uncompressed (FP32) recipe already measures " +
                num(pass_loss) + " (is the validation measurement deterministic?)");
  Probe fail = s.probes.front();
  int64_t lo = least, hi = std::max(fp32, least);
  const int64_t tol = options.tolerance_bytes > 0 ? options.tolerance_bytes : std::max<int64_t>(1, (hi - lo) / 256);
  while (hi - lo > tol && static_cast<int>(seen.size()) < options.max_probes) {
    const int64_t mid = lo + (hi - lo) / 2;
    auto [r, loss] = probe(mid);
    if (loss <= max_loss) {
      hi = mid;
      pass = std::move(r);
      pass_loss = loss;
    } else {
      lo = mid;
      fail = s.probes.back();
    }
  }
  s.recipe = std::move(pass);
  s.loss = pass_loss;
  s.next_smaller = fail;
  return s;
}

}  // namespace gradscope::compress
