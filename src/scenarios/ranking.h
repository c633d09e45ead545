// Leave-one-out ranking metrics, shared by the matrix-factorisation model and the baselines
// it is compared with, so every model is measured by the same code.
//
//   Ranking r = rank_held_out(data, user_weights, item_weights, 10);   // MF: scores u . i
//   Ranking p = rank_most_popular(data, 10);                           // most-popular baseline
//   std::cout << r.hr << " " << r.ndcg;        // HR@10, NDCG@10 over data.test_user
//
// Full ranking: the held-out item's rank is the number of items scored above it, leaving out
// the user's training items. HR@k counts ranks < k; NDCG@k adds 1 / log2(rank + 2) for them
// (one relevant item, so the ideal DCG is 1).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

#include "interactions.h"

namespace gradscope::scenarios {

/// HR@k and NDCG@k over the test users, and each user's hit and NDCG (Interactions::test_user
/// order), for paired tests.
struct Ranking {
  double hr = 0, ndcg = 0;
  std::vector<double> user_hr, user_ndcg;

  /// Adds one test user whose held-out item has `rank` (0 = first).
  void add(int64_t rank, int64_t top_k);
  /// Turns the sums into means over the users added.
  void finish();
};

/// Scores every item for every test user as users[u] . items[i] (float32 tables, rows x dim).
Ranking rank_held_out(const Interactions& data, const at::Tensor& users, const at::Tensor& items, int64_t top_k);

/// The most-popular baseline: items ordered by their number of training positives (ties by
/// the lower item id), the user's training items left out.
Ranking rank_most_popular(const Interactions& data, int64_t top_k);

}  // namespace gradscope::scenarios
