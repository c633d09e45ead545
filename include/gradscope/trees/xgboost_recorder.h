// Live XGBoost training recorded as a run: XGBoostLive reads the rounds as they end, and the
// run (run.db with one step per round, trees.json with the analysis, model.json with the
// booster's own model) is written when training ends, so `gradscope report`, `html`, `ls` and
// `diff` read it like a run of `gradscope trees`.
//
//   gradscope::XGBoostMatrix train_m(train), valid_m(valid);
//   gradscope::XGBoostBooster booster({&train_m, &valid_m});
//   booster.set_params({{"objective", "binary:logistic"}, {"max_depth", "3"}});
//   gradscope::XGBoostRecorder rec(booster, "runs/gbm", {&train, &valid});
//   for (int i = 0; i < 100; ++i) rec.update(i, train_m);
//   const gradscope::TreeRunSummary& s = rec.finish();   // s.report.findings
//
// The rounds are measured once, at finish(): the dynamics need every row's running margin,
// which one pass over all trees gives (core/trees/dynamics.h), so the cost during training is
// XGBoostLive's reads alone (docs/benchmarks.md, "Tree models"). If training stops with an
// exception, the destructor writes the rounds trained so far (a failure to write is printed
// to stderr: a destructor cannot throw).
#pragma once

#include <optional>
#include <string>

#include "gradscope/core/trees/dynamics.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/io/trees/store.h"
#include "gradscope/trees/xgboost_live.h"

namespace gradscope {

struct XGBoostRecorderOptions {
  XGBoostLiveOptions live;    ///< how often the booster is read
  TreeThresholds thresholds;  ///< what judges the rounds
  RunWriterOptions writer;    ///< run name, overwrite, command line
  /// What the run says its rows were (shown by report and html); "" for "training rows" and
  /// "validation rows".
  std::string data_name, validation_name, label;
};

class XGBoostRecorder {
 public:
  /// Follows `booster` (which must outlive the recorder) and will write the run to `run_dir`.
  /// `rows`: the training rows the rounds are measured on and, labelled, the validation rows
  /// (the same TreeData the matrices were made from; both optional, both must outlive the
  /// recorder).
  XGBoostRecorder(XGBoostBooster& booster, std::string run_dir, TreeDynamicsInput rows = {},
                  XGBoostRecorderOptions options = {});
  ~XGBoostRecorder();
  XGBoostRecorder(const XGBoostRecorder&) = delete;
  XGBoostRecorder& operator=(const XGBoostRecorder&) = delete;

  /// One round of training (XGBoostLive::update).
  void update(int iteration, const XGBoostMatrix& train) { live_.update(iteration, train); }
  /// Reads the rounds not read yet, measures and judges every round, writes the run and
  /// returns its summary. Throws Error when no round was trained, and what analysis and the
  /// run store throw. A second call returns the same summary.
  const TreeRunSummary& finish();

  /// The tracker underneath (its model and XGBoost's own metrics so far).
  const XGBoostLive& live() const { return live_; }
  const std::string& run_dir() const { return run_dir_; }

 private:
  XGBoostBooster& booster_;
  std::string run_dir_;
  TreeDynamicsInput rows_;
  XGBoostRecorderOptions options_;
  XGBoostLive live_;
  std::optional<TreeRunSummary> summary_;
};

}  // namespace gradscope
