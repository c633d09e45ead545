// XGBoost's C API (Debian's libxgboost-dev) behind two owning handles, for training in C++:
// the live tracker (xgboost_live.h), the demo, the tests and the benchmark use them.
//
//   gradscope::XGBoostMatrix train(data);                  // data.y becomes the label
//   gradscope::XGBoostBooster booster({&train});
//   booster.set_param("objective", "binary:logistic");
//   for (int i = 0; i < 100; ++i) booster.update(i, train);
//   std::vector<float> p = booster.predict(train);        // XGBoost's own predictions
//   std::string json = booster.save_json();               // parse_xgboost_json reads it
//
// Errors from XGBoost become gradscope::Error "xgboost: <what XGBoost said>", without
// XGBoost's timestamp and source location.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "gradscope/core/trees/data.h"

namespace gradscope {

/// XGBoost's version, "1.7.4".
std::string xgboost_version();

/// A DMatrix holding `data` as float32 (NaN missing), with its labels when it has them.
class XGBoostMatrix {
 public:
  explicit XGBoostMatrix(const TreeData& data);
  ~XGBoostMatrix();
  XGBoostMatrix(const XGBoostMatrix&) = delete;
  XGBoostMatrix& operator=(const XGBoostMatrix&) = delete;

  /// Marks columns "q" (numerical) or "c" (categorical), one per column.
  void set_feature_types(const std::vector<std::string>& types);
  /// The DMatrixHandle, for calls this class does not wrap.
  void* handle() const { return handle_; }
  /// Rows of the matrix.
  std::size_t rows() const { return rows_; }

 private:
  void* handle_ = nullptr;
  std::size_t rows_ = 0;
};

/// A Booster; `cache` are the matrices it keeps predictions for (training and evaluation).
class XGBoostBooster {
 public:
  explicit XGBoostBooster(const std::vector<const XGBoostMatrix*>& cache);
  ~XGBoostBooster();
  XGBoostBooster(const XGBoostBooster&) = delete;
  XGBoostBooster& operator=(const XGBoostBooster&) = delete;

  /// One training parameter (XGBoosterSetParam), or several.
  void set_param(const std::string& name, const std::string& value);
  void set_params(const std::map<std::string, std::string>& params);
  /// One boosting round on `train` (XGBoosterUpdateOneIter).
  void update(int iteration, const XGBoostMatrix& train);
  /// XGBoost's evaluation line for `matrices` named `names`, e.g. "[3]\ttrain-logloss:0.1".
  std::string eval(int iteration, const std::vector<const XGBoostMatrix*>& matrices,
                   const std::vector<std::string>& names);
  /// Predictions for every row (rows x outputs, row-major): margins when `margin`, else what
  /// predict() returns; with `rounds` > 0 only the first `rounds` rounds count.
  std::vector<float> predict(const XGBoostMatrix& data, bool margin = false, int rounds = 0);
  /// The model as XGBoost's JSON (XGBoosterSaveModelToBuffer): parse_xgboost_json reads it.
  std::string save_json() const;
  /// The model as XGBoost's UBJSON, which XGBoost writes far faster than JSON (no decimal
  /// printing of floats): parse_xgboost_ubjson reads it.
  std::string save_ubjson() const;
  /// Rounds `begin` to `end` (exclusive) as their own model (XGBoosterSlice), JSON or UBJSON.
  std::string slice_json(int begin, int end) const;
  std::string slice_ubjson(int begin, int end) const;
  /// Rounds boosted so far (XGBoosterBoostedRounds).
  int boosted_rounds() const;
  /// The BoosterHandle, for calls this class does not wrap.
  void* handle() const { return handle_; }

 private:
  void* handle_ = nullptr;
};

namespace internal {
/// Throws Error "xgboost: <message>" for a failed call (`status` != 0).
void check_xgboost(int status, const char* what);
}  // namespace internal

}  // namespace gradscope
