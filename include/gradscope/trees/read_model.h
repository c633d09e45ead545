// Reading a boosted tree model written by XGBoost, LightGBM or CatBoost into a TreeEnsemble
// (core/trees/model.h), the format found from the file's content.
//
//   gradscope::TreeEnsemble m = gradscope::read_tree_model("model.json");
//   std::cout << gradscope::dialect_name(m.dialect) << ": " << m.rounds << " rounds\n";
//
// Every reader checks what it reads: a truncated or damaged file is an Error naming the file
// and where in it ("lightgbm model 'm.txt': line 14: ...", "model 'm.json': byte 5120:
// malformed JSON: ...", or the JSON field "xgboost model 'm.json': learner.gradient_booster.
// model.trees[3].left_children[2]: ..."), never a crash, and the model it returns passed
// check_ensemble, so evaluating it is safe.
#pragma once

#include <cstdint>
#include <string>

#include "gradscope/core/trees/model.h"

namespace gradscope {

/// The model file formats gradscope reads.
enum class ModelFormat : uint8_t {
  kAuto,           ///< from the content (read_tree_model)
  kXGBoostJson,    ///< XGBoost's JSON model (save_model("m.json")), gbtree or dart
  kLightGBMText,   ///< LightGBM's text model (save_model)
  kLightGBMJson,   ///< LightGBM's dump_model() JSON
  kCatBoostJson,   ///< CatBoost's JSON model (save_model(format="json")), float features
  kXGBoostUbjson,  ///< XGBoost's UBJSON model (save_model("m.ubj"), XGBoost 2's default)
};

/// "xgboost-json", "lightgbm-text", "lightgbm-json", "catboost-json", "xgboost-ubjson"
/// ("auto" for kAuto).
const char* model_format_name(ModelFormat format);

/// The largest model file read: 1 GiB (a 1000-round depth-6 XGBoost model takes about 1 MB,
/// CatBoost's 992-tree fixture 4 MB), so a link to /dev/zero or a runaway file fails fast.
constexpr std::uintmax_t kMaxModelFileBytes = std::uintmax_t{1} << 30;

/// The format of a model file's text: JSON with "learner" (XGBoost), "oblivious_trees"
/// (CatBoost) or "tree_info" (LightGBM), LightGBM's text form (first line "tree"), or
/// XGBoost's UBJSON (an object whose first key is "learner").
/// Throws Error "model '<name>': ..." when it is none of these.
ModelFormat detect_model_format(const std::string& text, const std::string& name);

/// Parses a model held in `text`; `name` is how errors call it (a path, or "<fuzz input>").
TreeEnsemble parse_tree_model(const std::string& text, const std::string& name,
                              ModelFormat format = ModelFormat::kAuto);

/// Reads the regular file `path` (at most kMaxModelFileBytes) and parses it. Throws Error
/// naming the path when it is missing, not a regular file, too large or not a model.
TreeEnsemble read_tree_model(const std::string& path, ModelFormat format = ModelFormat::kAuto);

/// The parsers behind parse_tree_model, one per format (src/trees/<format>.cpp).
TreeEnsemble parse_xgboost_json(const std::string& text, const std::string& name);
TreeEnsemble parse_xgboost_ubjson(const std::string& bytes, const std::string& name);
TreeEnsemble parse_lightgbm_text(const std::string& text, const std::string& name);
TreeEnsemble parse_lightgbm_json(const std::string& text, const std::string& name);
TreeEnsemble parse_catboost_json(const std::string& text, const std::string& name);

}  // namespace gradscope
