// BPR matrix factorisation (Rendle et al. 2009) with the embedding tracker on its user and
// item tables: the embedding model of the demo and of `make validate-embedding`.
//
//   Interactions data = load_movielens("data/movielens.csv");
//   MfOptions opt;
//   opt.epochs = 10;
//   opt.on_step = [&](const std::vector<Record>& records) { for (auto& r : records) run.add(r); };
//   MfRun r = train_matrix_factorization(data, opt);
//   std::cout << r.hr << " " << r.ndcg << "\n";   // HR@10, NDCG@10 on the held-out items
//
// Training: dim 64, init N(0, 0.1), one uniform negative per positive (bpr_sampler.h), loss
// -log sigmoid(x_ui - x_uj) + l2 x (mean ||u||^2 + mean ||i||^2) over the batch's rows, Adam
// (or plain SGD). Evaluation: full ranking, the held-out item's rank among all items except
// the user's training items.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/core/Tensor.h>

#include "bpr_sampler.h"
#include "gradscope/core/embedding/profile.h"
#include "gradscope/core/embedding/report.h"
#include "gradscope/core/embedding/rows.h"
#include "gradscope/core/vocabulary/record.h"
#include "interactions.h"
#include "mf_faults.h"

namespace gradscope::scenarios {

/// One training step as the run's own code saw it, for ground truth kept apart from the
/// tracker: the batch's draws and, per table, the touched rows (ascending, unique) with their
/// values before and after the optimizer step (and any planted decay).
struct MfStep {
  int64_t step = 0;  ///< 0-based
  BprBatch batch;
  at::Tensor user_rows, user_before, user_after;
  at::Tensor item_rows, item_before, item_after;
};

/// The defaults are the model tuned on MovieLens' validation split (bench/baseline_validation,
/// docs/validation.md): Adam lr 3e-3, l2 0.01, dim 64, 60 epochs.
struct MfOptions {
  int64_t dim = 64;
  int64_t batch = 1024;
  int epochs = 60;
  double lr = 3e-3;
  bool sgd = false;     ///< plain SGD instead of Adam
  double l2 = 1e-2;
  int64_t top_k = 10;
  uint64_t seed = 0;    ///< initial weights; negatives and batches come from seed 1000 + seed
  bool auto_fix = false;  ///< the tracker's SNR-scaled zombie damping
  MfFaults faults;        ///< planted faults (none by default)
  /// Steps done and the total, after each step.
  std::function<void(int64_t, int64_t)> progress;
  /// Each tracked table's records of one step (the tracker's on_step: kEmbeddingRows and
  /// kUpdate records named "user" or "item"), e.g. for a RunWriter.
  std::function<void(const std::vector<Record>&)> on_step;
  /// Each auto-fix act (e.g. AuditLog::append).
  std::function<void(const EmbeddingIntervention&)> on_intervention;
  /// After each epoch (1-based): the user and item weights, e.g. to rank a validation split.
  std::function<void(int, const at::Tensor&, const at::Tensor&)> on_epoch;
  /// After each step: what it drew and how the touched rows moved (costs two row gathers
  /// per table; none when unset).
  std::function<void(const MfStep&)> on_update;
};

struct MfRun {
  double hr = 0, ndcg = 0;           ///< HR@top_k and NDCG@top_k over the test users
  std::vector<double> user_hr, user_ndcg;  ///< per test user, in Interactions::test_user order
  EmbeddingHubReport report;         ///< tables "user" and "item", and their correlation
  std::vector<EmbeddingProfile> profiles;  ///< the same tables' distributions, same order
  std::vector<EmbeddingRows> rows;         ///< the trackers' per-row state at the end, same order
  std::vector<at::Tensor> tables;          ///< the trained weights [rows, dim], same order
  int64_t interventions = 0, rows_scaled = 0;  ///< auto-fix acts and rows they touched
  int64_t steps = 0;
  double final_loss = 0;
  double seconds = 0;
};

/// Trains and evaluates (ranking.h). Throws Error when `data` has no training pairs or no
/// test users, or a fault does not fit (check_faults).
MfRun train_matrix_factorization(const Interactions& data, const MfOptions& options);

}  // namespace gradscope::scenarios
