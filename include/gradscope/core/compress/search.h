// A measured maximum loss: the smallest recipe whose loss, measured on a validation set the
// caller evaluates, stays within a bound. The rule's --max-loss bounds a predicted loss, which
// underprices pruning (docs/validation.md section 4); this search applies candidates and
// measures them instead. Bisection over the byte budget of make_recipe: each probe is one
// recipe and one measurement. Standard library only: the caller's function applies a recipe
// and measures it (torch/compress/search.h does so on a LibTorch model).
//
//   auto loss = [&](const Recipe& r) { /* apply r to a copy, evaluate, restore */ return 0.0; };
//   MeasuredSearch s = gradscope::compress::search_max_loss(profiles, /*max_loss=*/0.01, loss);
//   // s.recipe: measured loss s.loss <= 0.01; s.next_smaller: the probe below it, > 0.01
#pragma once

#include <functional>
#include <vector>

#include "gradscope/core/compress/recipe.h"
#include "gradscope/core/compress/rule.h"

namespace gradscope::compress {

/// One recipe the search measured.
struct Probe {
  int64_t budget_bytes = 0;  ///< the budget make_recipe was given
  int64_t bytes = 0;         ///< the recipe's size as stored
  double loss = NodeProfile::kNone;  ///< measured loss increase on the validation set
};

/// How the search runs.
struct SearchOptions {
  RuleOptions rule;      ///< the rule that makes each candidate
  int max_probes = 16;   ///< measurements at most (the first two: smallest size, FP32)
  /// Stop when the failing and passing budgets are this close; 0: 1/256 of the range.
  int64_t tolerance_bytes = 0;
};

/// What the search found.
struct MeasuredSearch {
  Recipe recipe;              ///< the smallest passing recipe probed
  double loss = 0;            ///< its measured loss (<= the bound)
  double max_loss = 0;        ///< the bound asked for
  bool reached_smallest = false;  ///< the recipe is at the smallest reachable size
  Probe next_smaller;         ///< the largest failing probe below it (budget 0 when none)
  std::vector<Probe> probes;  ///< every probe, in order
};

/// Loss increase of a recipe as measured by the caller (e.g. FP32 accuracy minus accuracy).
using MeasureLoss = std::function<double(const Recipe&)>;

/// The smallest recipe whose measured loss is <= max_loss. Assumes the loss falls as bytes grow
/// (bisection); what it guarantees is only what it measured: the returned recipe is within the
/// bound and the next smaller probe (within tolerance_bytes of its budget) is not, or the
/// smallest reachable size passed. Throws Error for a bound that is negative or not finite, a
/// measurement that is NaN, an FP32 model measured above the bound, or invalid profiles.
MeasuredSearch search_max_loss(const std::vector<NodeProfile>& profiles, double max_loss, const MeasureLoss& measure,
                               const SearchOptions& options = {});

}  // namespace gradscope::compress
