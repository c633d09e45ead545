// Live tracking of XGBoost training: as rounds end, their trees are read from the booster and
// appended to a TreeEnsemble, so the round dynamics (core/trees/dynamics.h) can consume rounds
// as they come, and each round's evaluation metrics (training and validation loss) are kept.
//
//   gradscope::XGBoostMatrix train(train_rows), valid(valid_rows);
//   gradscope::XGBoostBooster booster({&train, &valid});
//   booster.set_param("objective", "binary:logistic");
//   gradscope::XGBoostLive live(booster, {{"train", &train}, {"valid", &valid}});
//   for (int i = 0; i < 100; ++i) live.update(i, train);   // one round, read as it ends
//   live.sync();                                           // DART: the final tree weights
//   live.model();                                          // == the model XGBoost saves
//   live.metrics()[99].value("valid-logloss");
//
// The new rounds are read with XGBoosterSlice (only their trees are serialized, as UBJSON,
// which XGBoost writes much faster than JSON), as often as a budget of 1% of the training
// time allows (or every k rounds); docs/benchmarks.md measures the cost against the rounds.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/trees/model.h"
#include "gradscope/trees/xgboost_api.h"

namespace gradscope {

/// One round's evaluation metrics, as XGBoost names them ("train-logloss", "valid-auc").
struct RoundMetrics {
  int32_t round = 0;  ///< 0-based: the metrics after this round's trees were added
  std::vector<std::pair<std::string, double>> values;

  /// The value named `name`, or NaN when the round has none.
  double value(const std::string& name) const;
};

/// The metrics of XGBoost's evaluation line "[3]\ttrain-logloss:0.25\tvalid-logloss:0.31"
/// (XGBoosterEvalOneIter). Throws Error "xgboost evaluation '<line>': ..." when it is not one.
RoundMetrics parse_xgboost_eval(const std::string& line);

/// How often the tracker reads the booster.
struct XGBoostLiveOptions {
  /// Rounds between two reads of new trees: 1 reads each round as it ends, k reads k rounds
  /// with one slice. 0 (the default) reads as often as `budget` allows.
  int every = 0;
  /// With every == 0: the share of the training time that reads may take. A read costs a
  /// fixed part (XGBoosterSlice makes a booster) and a part per tree; the tracker reads when
  /// the training since its last read, times `budget`, covers what that read cost, so the
  /// fixed part is spread over more rounds when rounds are quick. The first round is always
  /// read at once.
  double budget = 0.01;
  /// With every == 0: the most rounds between two reads, however quick the rounds.
  int max_every = 32;
};

/// Follows one booster's training: trains rounds (update), evaluates them on the named
/// matrices, and keeps the trees grown so far as a TreeEnsemble.
class XGBoostLive {
 public:
  /// Called after each read with the model so far and the first round that read added.
  using RoundsCallback = std::function<void(const TreeEnsemble& model, int32_t first_new)>;

  /// Attaches to `booster` (which must outlive the tracker); rounds it already holds are read
  /// at the first read. `evals` are (name, matrix) pairs evaluated after every round.
  explicit XGBoostLive(XGBoostBooster& booster,
                       std::vector<std::pair<std::string, const XGBoostMatrix*>> evals = {},
                       XGBoostLiveOptions options = {});

  /// Trains one round (XGBoosterUpdateOneIter), records its metrics and, every `every`
  /// rounds, reads the new trees.
  void update(int iteration, const XGBoostMatrix& train);
  /// Reads every round not read yet. For DART it also refreshes the weights of all trees
  /// (XGBoost rescales trees dropped in later rounds), with one save of the whole model.
  void sync();

  /// The trees read so far (all rounds after sync()).
  const TreeEnsemble& model() const { return model_; }
  /// The metrics of every round trained through update(), in order.
  const std::vector<RoundMetrics>& metrics() const { return metrics_; }
  /// Called after each read (see RoundsCallback).
  void on_rounds(RoundsCallback callback) { callback_ = std::move(callback); }

 private:
  void read_new_rounds();

  XGBoostBooster& booster_;
  std::vector<const XGBoostMatrix*> eval_matrices_;
  std::vector<std::string> eval_names_;
  XGBoostLiveOptions options_;
  TreeEnsemble model_;
  std::vector<RoundMetrics> metrics_;
  int trained_since_read_ = 0;
  double trained_seconds_ = 0;  // in update() since the last read
  double read_seconds_ = 0;     // what the last read took
  RoundsCallback callback_;
};

}  // namespace gradscope
