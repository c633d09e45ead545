#include "gradscope/trees/read_model.h"

#include <algorithm>

#include "gradscope/core/error.h"
#include "internal/model_json.h"
#include "internal/regular_file.h"

namespace gradscope {
namespace {

// As deep as the deepest reader allows (LightGBM's nested trees).
constexpr int kMaxDetectDepth = 8192;

// The first non-space character, or '\0'.
char first_char(const std::string& text) {
  const auto it = std::find_if(text.begin(), text.end(), [](char c) {
    return c != ' ' && c != '\n' && c != '\r' && c != '\t';
  });
  return it == text.end() ? '\0' : *it;
}

// Whether the first 256 bytes hold a control character that JSON text never has: UBJSON also
// opens with '{', then binary lengths.
bool binary(const std::string& text) {
  const std::size_t n = std::min<std::size_t>(text.size(), 256);
  return std::any_of(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(n), [](char c) {
    return static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\r' && c != '\t';
  });
}

// Whether `key` appears as a JSON key ("key":) in the first `window` bytes: the top-level keys
// of each format come early (XGBoost's "learner" first; CatBoost and LightGBM dumps put their
// names before the trees), so a large model is not scanned whole.
bool has_key(const std::string& text, const std::string& key, std::size_t window) {
  const std::string quoted = "\"" + key + "\"";
  const std::size_t limit = std::min(window, text.size());
  for (std::size_t at = text.find(quoted); at != std::string::npos && at < limit;
       at = text.find(quoted, at + 1)) {
    std::size_t i = at + quoted.size();
    while (i < text.size() &&
           (text[i] == ' ' || text[i] == '\n' || text[i] == '\r' || text[i] == '\t'))
      ++i;
    if (i < text.size() && text[i] == ':') return true;
  }
  return false;
}

}  // namespace

const char* model_format_name(ModelFormat format) {
  switch (format) {
    case ModelFormat::kAuto:
      return "auto";
    case ModelFormat::kXGBoostJson:
      return "xgboost-json";
    case ModelFormat::kLightGBMText:
      return "lightgbm-text";
    case ModelFormat::kLightGBMJson:
      return "lightgbm-json";
    case ModelFormat::kCatBoostJson:
      return "catboost-json";
    case ModelFormat::kXGBoostUbjson:
      return "xgboost-ubjson";
  }
  return "?";
}

ModelFormat detect_model_format(const std::string& text, const std::string& name) {
  if (text.compare(0, 5, "tree\n") == 0 || text.compare(0, 6, "tree\r\n") == 0)
    return ModelFormat::kLightGBMText;
  const char c = first_char(text);
  if (c == '{' && !binary(text)) {
    // CatBoost writes features_info and model_info before its trees; a whole-file scan is the
    // fallback for files that order keys differently.
    for (const std::size_t window : {std::size_t{1} << 16, text.size()}) {
      if (has_key(text, "learner", window)) return ModelFormat::kXGBoostJson;
      if (has_key(text, "oblivious_trees", window)) return ModelFormat::kCatBoostJson;
      if (has_key(text, "tree_info", window)) return ModelFormat::kLightGBMJson;
    }
    // None of the keys: a file cut before them says where it is broken, JSON of another kind
    // that it is none of these.
    try {
      trees_internal::parse_model_json(text, kMaxDetectDepth);
    } catch (const Error& e) {
      throw Error("model '" + name + "': " + e.what());
    }
    throw Error("model '" + name +
                "': JSON with none of \"learner\" (XGBoost), \"oblivious_trees\" (CatBoost) or "
                "\"tree_info\" (LightGBM dump_model)");
  }
  // XGBoost's UBJSON: '{', then the key "learner" with its length in binary.
  if (text[0] == '{' && text.substr(0, 24).find("learner") != std::string::npos)
    return ModelFormat::kXGBoostUbjson;
  if (c == '\0') throw Error("model '" + name + "': empty file");
  if (c == '[' || c == '{' || static_cast<unsigned char>(c) < 0x20 ||
      static_cast<unsigned char>(c) >= 0x80)
    throw Error("model '" + name +
                "': not a model gradscope reads (a binary file; XGBoost's old binary models: "
                "save them as .json or .ubj)");
  throw Error("model '" + name +
              "': not a model gradscope reads (an XGBoost or CatBoost JSON model, or a LightGBM "
              "text or dump_model JSON model)");
}

TreeEnsemble parse_tree_model(const std::string& text, const std::string& name,
                              ModelFormat format) {
  if (format == ModelFormat::kAuto) format = detect_model_format(text, name);
  switch (format) {
    case ModelFormat::kXGBoostJson:
      return parse_xgboost_json(text, name);
    case ModelFormat::kLightGBMText:
      return parse_lightgbm_text(text, name);
    case ModelFormat::kLightGBMJson:
      return parse_lightgbm_json(text, name);
    case ModelFormat::kCatBoostJson:
      return parse_catboost_json(text, name);
    case ModelFormat::kXGBoostUbjson:
      return parse_xgboost_ubjson(text, name);
    case ModelFormat::kAuto:
      break;
  }
  throw Error("model '" + name + "': unknown format");
}

TreeEnsemble read_tree_model(const std::string& path, ModelFormat format) {
  std::optional<std::string> text;
  try {
    text = internal::read_regular_file(path, kMaxModelFileBytes);
  } catch (const Error& e) {
    throw Error("model '" + path + "': " + e.what());
  }
  if (!text) throw Error("model '" + path + "': no such file");
  return parse_tree_model(*text, path, format);
}

}  // namespace gradscope
