#include "draw_counts.h"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "gradscope/core/error.h"

namespace gradscope::scenarios {
namespace {

void count(const at::Tensor& ids, std::vector<int64_t>& counts, const char* what) {
  const at::Tensor c = ids.to(at::kLong).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  for (int64_t k = 0; k < c.numel(); ++k) {
    if (p[k] < 0 || p[k] >= static_cast<int64_t>(counts.size()))
      throw Error(std::string("draw counts: ") + what + " id " + std::to_string(p[k]) + " is outside [0, " +
                  std::to_string(counts.size()) + ")");
    ++counts[p[k]];
  }
}

}  // namespace

DrawCounts::DrawCounts(int64_t users, int64_t items) : users_(users, 0), positives_(items, 0), negatives_(items, 0) {}

void DrawCounts::add(const BprBatch& b) {
  count(b.users, users_, "user");
  count(b.positives, positives_, "positive item");
  count(b.negatives, negatives_, "negative item");
}

double DrawCounts::negative_tv_to_uniform() const {
  double total = 0;
  for (int64_t n : negatives_) total += static_cast<double>(n);
  if (total == 0) return std::numeric_limits<double>::quiet_NaN();
  const double uniform = 1.0 / static_cast<double>(negatives_.size());
  double tv = 0;
  for (int64_t n : negatives_) tv += std::abs(static_cast<double>(n) / total - uniform);
  return tv / 2;
}

double DrawCounts::item_lookup_gini() const {
  std::vector<int64_t> lookups(positives_.size());
  for (std::size_t i = 0; i < lookups.size(); ++i) lookups[i] = positives_[i] + negatives_[i];
  return gini_of_positive(std::move(lookups));
}

double DrawCounts::user_lookup_gini() const { return gini_of_positive(users_); }

std::vector<int64_t> DrawCounts::never_drawn_items() const {
  std::vector<int64_t> out;
  for (std::size_t i = 0; i < positives_.size(); ++i)
    if (positives_[i] == 0 && negatives_[i] == 0) out.push_back(static_cast<int64_t>(i));
  return out;
}

std::vector<int64_t> DrawCounts::never_drawn_users() const {
  std::vector<int64_t> out;
  for (std::size_t u = 0; u < users_.size(); ++u)
    if (users_[u] == 0) out.push_back(static_cast<int64_t>(u));
  return out;
}

double gini_of_positive(std::vector<int64_t> counts) {
  counts.erase(std::remove(counts.begin(), counts.end(), 0), counts.end());
  if (counts.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(counts.begin(), counts.end());
  const auto n = static_cast<double>(counts.size());
  double weighted = 0, total = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    weighted += (2.0 * static_cast<double>(i + 1) - n - 1.0) * static_cast<double>(counts[i]);
    total += static_cast<double>(counts[i]);
  }
  return weighted / (n * total);
}

}  // namespace gradscope::scenarios
