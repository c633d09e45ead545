// XGBoostRecorder: XGBoostLive during training, write_tree_run at the end.
#include "gradscope/trees/xgboost_recorder.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <utility>

#include "gradscope/core/error.h"

namespace gradscope {

XGBoostRecorder::XGBoostRecorder(XGBoostBooster& booster, std::string run_dir,
                                 TreeDynamicsInput rows, XGBoostRecorderOptions options)
    : booster_(booster),
      run_dir_(std::move(run_dir)),
      rows_(rows),
      options_(std::move(options)),
      live_(booster, {}, options_.live) {
  options_.thresholds.validate();
  if (run_dir_.empty()) throw Error("XGBoostRecorder: the run folder is empty");
}

XGBoostRecorder::~XGBoostRecorder() {
  if (summary_ || booster_.boosted_rounds() == 0) return;
  try {
    finish();
  } catch (const std::exception& e) {
    std::cerr << "gradscope: the XGBoost run '" << run_dir_ << "' was not written: " << e.what()
              << "\n";
  }
}

const TreeRunSummary& XGBoostRecorder::finish() {
  if (summary_) return *summary_;
  live_.sync();
  const TreeEnsemble& model = live_.model();
  if (model.rounds == 0)
    throw Error("XGBoostRecorder '" + run_dir_ + "': no round was trained, nothing to record");
  const std::string model_file = (std::filesystem::path(run_dir_) / "model.json").string();
  TreeRunSummary s{model_file,
                   rows_.reference ? (options_.data_name.empty() ? "training rows"
                                                                 : options_.data_name)
                                   : "",
                   rows_.validation ? (options_.validation_name.empty() ? "validation rows"
                                                                        : options_.validation_name)
                                    : "",
                   options_.label,
                   analyze_tree_dynamics(model, rows_, options_.thresholds)};
  write_tree_run(run_dir_, s, options_.writer);
  // The booster's own model beside the run: `gradscope trees <run>/model.json` reproduces it.
  const std::string json = booster_.save_json();
  std::ofstream out(model_file, std::ios::binary | std::ios::trunc);
  out.write(json.data(), static_cast<std::streamsize>(json.size()));
  out.close();
  if (!out) throw Error("XGBoostRecorder: cannot write '" + model_file + "'");
  summary_ = std::move(s);
  return *summary_;
}

}  // namespace gradscope
