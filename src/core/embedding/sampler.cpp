// NEGATIVE_SAMPLER_SKEW's measurement: the negatives a run drew against the sampler it declared.
#include <algorithm>
#include <cmath>
#include <map>
#include <utility>
#include <vector>

#include "gradscope/core/embedding/math.h"
#include "gradscope/core/embedding/report.h"

namespace gradscope {

SamplerSkew negative_sampler_skew(const EmbeddingRows& rows, const NegativeSampler& sampler) {
  SamplerSkew s;
  const int64_t n_rows = rows.rows();
  for (int64_t r = 0; r < n_rows; ++r) s.negatives += rows.negatives(r);
  if (s.negatives == 0) {
    s.not_judged = "no negatives marked (EmbeddingTracker::observe(indices, Role::kNegative))";
    return s;
  }
  // Expected probability of each row under the declared sampler, as weight / total.
  std::vector<double> weight(static_cast<std::size_t>(n_rows), 1.0);
  if (sampler.kind == NegativeSampler::Kind::kPopularity) {
    for (int64_t r = 0; r < n_rows; ++r) {
      const double positives = static_cast<double>(rows.lookups(r)) - rows.negatives(r);
      weight[static_cast<std::size_t>(r)] = positives > 0 ? std::pow(positives, sampler.exponent) : 0.0;
    }
  }
  double total = 0;
  for (double w : weight) total += w;
  if (!(total > 0)) {
    s.not_judged = "the popularity sampler needs lookups that are not negatives, and the table has none";
    return s;
  }
  const double n = static_cast<double>(s.negatives);
  double tv = 0;
  std::vector<std::pair<double, int64_t>> over;  // the 10 largest (drawn - expected, row), a min-heap
  const auto larger = [](const std::pair<double, int64_t>& a, const std::pair<double, int64_t>& b) {
    return a.first > b.first;
  };
  // Rows with equal weight share their chance deviation: one lgamma per distinct weight.
  std::map<double, int64_t> rows_of_weight;
  for (int64_t r = 0; r < n_rows; ++r) {
    const double p = weight[static_cast<std::size_t>(r)] / total;
    const double excess = rows.negatives(r) / n - p;
    tv += std::fabs(excess);
    if (excess > 0 && (over.size() < 10 || excess > over.front().first)) {
      if (over.size() == 10) {
        std::pop_heap(over.begin(), over.end(), larger);
        over.pop_back();
      }
      over.emplace_back(excess, r);
      std::push_heap(over.begin(), over.end(), larger);
    }
    ++rows_of_weight[weight[static_cast<std::size_t>(r)]];
  }
  s.tv = 0.5 * tv;
  double chance = 0;
  for (const auto& [w, count] : rows_of_weight)
    chance += count * binomial_mean_absolute_deviation(s.negatives, std::min(1.0, w / total));
  s.tv_chance = chance / (2.0 * n);
  std::sort_heap(over.begin(), over.end(), larger);  // largest excess first
  for (const auto& o : over) s.most_over.push_back(o.second);
  return s;
}

}  // namespace gradscope
