// Embedding-table compression, measured: trains BPR matrix factorisation with the tracker
// (matrix_factorization.h), builds each table's row profile, and ranks the held-out items with
// each table compressed by the row rule or a baseline at equal bytes (HR@10, NDCG@10).
//
//   for (const MfMeasured& m : compare_mf_methods(load_movielens(path), /*seed=*/1, 60))
//     std::cout << m.method << " " << m.bytes << " B HR@10 " << m.hr << "\n";
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "interactions.h"

namespace gradscope::scenarios {

/// Both tables compressed by one method to one budget each (the bytes of that table's uniform
/// per-row INT8, INT4, INT3 or INT2), ranked.
struct MfMeasured {
  std::string method, budget;
  int64_t bytes = 0;  ///< user + item tables as stored
  double hr = 0, ndcg = 0;
  std::vector<double> user_hr;  ///< per test user, for paired tests
  int64_t merged_rows = 0;      ///< rows served by another row's stored values (both tables)
};

/// FP32 first (budget "fp32"), then uniform INT8 / INT4, and at each of their sizes and at half
/// of INT4's: the row rule ("dynamics"), without the frequency ("static"), with near-identical
/// rows merged ("dynamics-merge", torch: add_merge_candidates at the default bounds), pruning the
/// smallest-norm rows ("magnitude") or the least-looked-up rows ("frequency"), the rest INT8.
std::vector<MfMeasured> compare_mf_methods(const Interactions& data, uint64_t seed, int epochs);

}  // namespace gradscope::scenarios
