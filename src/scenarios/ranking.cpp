#include "ranking.h"

#include <ATen/ATen.h>

#include <cmath>

namespace gradscope::scenarios {

void Ranking::add(int64_t rank, int64_t top_k) {
  const bool hit = rank < top_k;
  const double nd = hit ? 1.0 / std::log2(static_cast<double>(rank) + 2.0) : 0.0;
  user_hr.push_back(hit ? 1.0 : 0.0);
  user_ndcg.push_back(nd);
  hr += hit;
  ndcg += nd;
}

void Ranking::finish() {
  if (user_hr.empty()) return;
  hr /= static_cast<double>(user_hr.size());
  ndcg /= static_cast<double>(user_hr.size());
}

Ranking rank_held_out(const Interactions& d, const at::Tensor& users, const at::Tensor& items, int64_t top_k) {
  at::NoGradGuard g;
  const at::Tensor scores = at::matmul(users, items.t()).contiguous();
  const float* sp = scores.data_ptr<float>();
  Ranking out;
  for (std::size_t k = 0; k < d.test_user.size(); ++k) {
    const int64_t u = d.test_user[k];
    const float* row = sp + u * d.items;
    const float target = row[d.test_item[k]];
    int64_t rank = 0;
    for (int64_t i = 0; i < d.items; ++i) rank += row[i] > target;
    for (int64_t i : d.seen[u]) rank -= row[i] > target;
    out.add(rank, top_k);
  }
  out.finish();
  return out;
}

Ranking rank_most_popular(const Interactions& d, int64_t top_k) {
  const std::vector<int64_t> order = items_by_popularity(d);
  std::vector<int64_t> position(d.items);
  for (int64_t p = 0; p < d.items; ++p) position[order[p]] = p;
  Ranking out;
  for (std::size_t k = 0; k < d.test_user.size(); ++k) {
    const int64_t target = position[d.test_item[k]];
    int64_t rank = target;  // items ahead of it, less the user's own training items among them
    for (int64_t i : d.seen[d.test_user[k]]) rank -= position[i] < target;
    out.add(rank, top_k);
  }
  out.finish();
  return out;
}

}  // namespace gradscope::scenarios
