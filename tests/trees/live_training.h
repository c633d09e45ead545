// Training real XGBoost models on the scikit-learn data sets for the tree-dynamics tests, and
// the ground truth those tests check against: XGBoost's own margins for every prefix of rounds
// (predict with iteration_end = k) and its own feature importance, with the metrics computed
// here from those margins, not by the code under test.
#pragma once

#include <xgboost/c_api.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gradscope/core/trees/data.h"
#include "gradscope/core/trees/model.h"
#include "gradscope/trees/data_files.h"
#include "gradscope/trees/read_model.h"
#include "gradscope/trees/xgboost_api.h"

namespace gradscope::test {

/// Where scripts/fetch-data.sh put the data: $GRADSCOPE_DATA_DIR, else the checkout's data/.
inline std::string data_path(const std::string& file) {
  const char* env = std::getenv("GRADSCOPE_DATA_DIR");
  return std::string(env ? env : GRADSCOPE_DEFAULT_DATA_DIR) + "/" + file;
}

/// breast_cancer and digits in scikit-learn's layout; diabetes with its header ("target").
inline TreeData load_data(const std::string& name) {
  if (name == "diabetes") return read_csv_data(data_path("diabetes.csv"), "target");
  return read_sklearn_csv(data_path(name + ".csv"));
}

/// `d` with one more column, "leak": the label plus normal noise of `sd_fraction` of the
/// label's standard deviation.
inline TreeData with_leak(const TreeData& d, double sd_fraction, uint64_t seed) {
  double mean = 0, var = 0;
  for (double y : d.y) mean += y / static_cast<double>(d.rows);
  for (double y : d.y) var += (y - mean) * (y - mean) / static_cast<double>(d.rows);
  std::mt19937_64 gen(seed);
  std::normal_distribution<double> noise(0, sd_fraction * std::sqrt(var));
  TreeData out;
  out.rows = d.rows;
  out.cols = d.cols + 1;
  out.y = d.y;
  out.names = d.names;
  out.names.push_back("leak");
  for (std::size_t i = 0; i < d.rows; ++i) {
    out.x.insert(out.x.end(), d.row(i), d.row(i) + d.cols);
    out.x.push_back(d.y[i] + noise(gen));
  }
  return out;
}

/// What to train: a data set, XGBoost's parameters, the rounds.
struct LiveCase {
  std::string data;
  std::map<std::string, std::string> params;
  int rounds = 0;
};

/// The healthy controls' settings (docs/trees.md): a moderate learning rate, shallow trees,
/// rounds short of where the validation loss stops improving. Faults change one knob of these.
inline LiveCase healthy_case(const std::string& data) {
  if (data == "digits")
    return {
        data,
        {{"objective", "multi:softprob"}, {"num_class", "10"}, {"eta", "0.3"}, {"max_depth", "4"}},
        50};
  if (data == "diabetes")
    return {data, {{"objective", "reg:squarederror"}, {"eta", "0.1"}, {"max_depth", "2"}}, 50};
  return {data, {{"objective", "binary:logistic"}, {"eta", "0.3"}, {"max_depth", "3"}}, 100};
}

/// A booster trained for `rounds` rounds on `train`, with `valid` in its cache, parsed back
/// through the XGBoost JSON reader.
struct Trained {
  TreeData train, valid;
  std::unique_ptr<XGBoostMatrix> train_m, valid_m;
  std::unique_ptr<XGBoostBooster> booster;
  TreeEnsemble model;

  /// XGBoost's predictions of the first k rounds (k >= 1): probabilities (or values) for
  /// every row, rows x outputs; margins when `margin`.
  std::vector<float> predict(bool on_valid, int k, bool margin = false) const {
    return booster->predict(on_valid ? *valid_m : *train_m, margin, k);
  }
};

/// Trains with `params` (base_score 0.5 and nthread 1 unless given) on `train`, with `valid`
/// in the booster's cache. One thread: tests run beside each other and beside other work, and
/// XGBoost's OpenMP barriers wait on any thread the machine has descheduled (with two threads,
/// a loaded two-core machine took the longest test that trains here from 7 s past 600 s).
inline std::unique_ptr<Trained> train_on(TreeData train, TreeData valid,
                                         std::map<std::string, std::string> params, int rounds) {
  auto t = std::make_unique<Trained>();
  t->train = std::move(train);
  t->valid = std::move(valid);
  t->train_m = std::make_unique<XGBoostMatrix>(t->train);
  t->valid_m = std::make_unique<XGBoostMatrix>(t->valid);
  t->booster = std::make_unique<XGBoostBooster>(
      std::vector<const XGBoostMatrix*>{t->train_m.get(), t->valid_m.get()});
  params.emplace("base_score", "0.5");
  params.emplace("nthread", "1");
  params.emplace("seed", "1");
  t->booster->set_params(params);
  for (int i = 0; i < rounds; ++i) t->booster->update(i, *t->train_m);
  t->model = parse_xgboost_json(t->booster->save_json(), "live booster");
  return t;
}

/// train_on a split of `all` that keeps `valid_fraction` of the rows for validation (split
/// seed 7 unless given).
inline std::unique_ptr<Trained> train_live(const TreeData& all, double valid_fraction,
                                           std::map<std::string, std::string> params, int rounds,
                                           uint64_t split_seed = 7) {
  auto [train, valid] = split_rows(all, valid_fraction, split_seed);
  return train_on(std::move(train), std::move(valid), std::move(params), rounds);
}

/// The metrics from XGBoost's margins (rows x outputs), written out here as their definitions
/// in double (p clipped to [1e-16, 1 - 1e-16] as XGBoost's metrics clip it).
inline double clipped(double p) { return std::min(std::max(p, 1e-16), 1 - 1e-16); }

inline double logloss(const std::vector<float>& margin, const std::vector<double>& y) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    const double p = 1 / (1 + std::exp(-static_cast<double>(margin[i])));
    s -= y[i] * std::log(clipped(p)) + (1 - y[i]) * std::log(clipped(1 - p));
  }
  return s / static_cast<double>(y.size());
}

inline double mlogloss(const std::vector<float>& margin, const std::vector<double>& y,
                       std::size_t classes) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    double sum = 0;
    for (std::size_t c = 0; c < classes; ++c)
      sum += std::exp(static_cast<double>(margin[i * classes + c]));
    s -= std::log(clipped(
        std::exp(static_cast<double>(margin[i * classes + static_cast<std::size_t>(y[i])])) / sum));
  }
  return s / static_cast<double>(y.size());
}

inline double rmse(const std::vector<float>& margin, const std::vector<double>& y) {
  double s = 0;
  for (std::size_t i = 0; i < y.size(); ++i) s += (margin[i] - y[i]) * (margin[i] - y[i]);
  return std::sqrt(s / static_cast<double>(y.size()));
}

/// XGBoost's total-gain importance of every feature, as shares of their sum.
inline std::vector<double> total_gain_shares(const XGBoostBooster& b, std::size_t features) {
  bst_ulong n = 0, dim = 0;
  const char** names = nullptr;
  const bst_ulong* shape = nullptr;
  const float* scores = nullptr;
  internal::check_xgboost(XGBoosterFeatureScore(b.handle(), "{\"importance_type\": \"total_gain\"}",
                                                &n, &names, &dim, &shape, &scores),
                          "feature score");
  std::vector<double> share(features, 0.0);
  double sum = 0;
  for (bst_ulong i = 0; i < n; ++i) {
    // Unnamed features come back as "f<index>".
    const std::size_t f = static_cast<std::size_t>(std::stoul(std::string(names[i]).substr(1)));
    share.at(f) = scores[i];
    sum += scores[i];
  }
  for (double& s : share) s /= sum;
  return share;
}

}  // namespace gradscope::test
