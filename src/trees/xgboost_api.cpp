#include "gradscope/trees/xgboost_api.h"

#include <xgboost/c_api.h>

#include <cmath>

#include "gradscope/core/error.h"

namespace gradscope {
namespace internal {

// XGBoost's messages start "[20:33:12] /build/src/learner.cc:123: "; what follows is the news.
void check_xgboost(int status, const char* what) {
  if (status == 0) return;
  std::string m = XGBGetLastError();
  if (!m.empty() && m[0] == '[') {
    const auto time_end = m.find("] ");
    const auto loc_end =
        time_end == std::string::npos ? std::string::npos : m.find(": ", time_end + 2);
    if (loc_end != std::string::npos) m = m.substr(loc_end + 2);
  }
  const auto stack = m.find("\nStack trace");
  if (stack != std::string::npos) m = m.substr(0, stack);
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  throw Error(std::string("xgboost: ") + what + ": " + m);
}

}  // namespace internal

using internal::check_xgboost;

std::string xgboost_version() {
  int major = 0, minor = 0, patch = 0;
  XGBoostVersion(&major, &minor, &patch);
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

XGBoostMatrix::XGBoostMatrix(const TreeData& data) : rows_(data.rows) {
  std::vector<float> x(data.x.begin(), data.x.end());
  check_xgboost(XGDMatrixCreateFromMat(x.data(), data.rows, data.cols, NAN, &handle_),
                "creating a DMatrix");
  if (data.labelled()) {
    const std::vector<float> y(data.y.begin(), data.y.end());
    check_xgboost(XGDMatrixSetFloatInfo(handle_, "label", y.data(), y.size()), "setting labels");
  }
}

XGBoostMatrix::~XGBoostMatrix() {
  if (handle_) XGDMatrixFree(handle_);
}

void XGBoostMatrix::set_feature_types(const std::vector<std::string>& types) {
  std::vector<const char*> p;
  for (const std::string& t : types) p.push_back(t.c_str());
  check_xgboost(XGDMatrixSetStrFeatureInfo(handle_, "feature_type", p.data(), p.size()),
                "setting feature types");
}

XGBoostBooster::XGBoostBooster(const std::vector<const XGBoostMatrix*>& cache) {
  std::vector<DMatrixHandle> h;
  for (const XGBoostMatrix* m : cache) h.push_back(m->handle());
  check_xgboost(XGBoosterCreate(h.data(), h.size(), &handle_), "creating a booster");
}

XGBoostBooster::~XGBoostBooster() {
  if (handle_) XGBoosterFree(handle_);
}

void XGBoostBooster::set_param(const std::string& name, const std::string& value) {
  check_xgboost(XGBoosterSetParam(handle_, name.c_str(), value.c_str()),
                ("setting " + name).c_str());
}

void XGBoostBooster::set_params(const std::map<std::string, std::string>& params) {
  for (const auto& [k, v] : params) set_param(k, v);
}

void XGBoostBooster::update(int iteration, const XGBoostMatrix& train) {
  check_xgboost(XGBoosterUpdateOneIter(handle_, iteration, train.handle()), "training a round");
}

std::string XGBoostBooster::eval(int iteration, const std::vector<const XGBoostMatrix*>& matrices,
                                 const std::vector<std::string>& names) {
  std::vector<DMatrixHandle> h;
  std::vector<const char*> n;
  for (const XGBoostMatrix* m : matrices) h.push_back(m->handle());
  for (const std::string& s : names) n.push_back(s.c_str());
  const char* out = nullptr;
  check_xgboost(XGBoosterEvalOneIter(handle_, iteration, h.data(), n.data(), h.size(), &out),
                "evaluating");
  return out;
}

std::vector<float> XGBoostBooster::predict(const XGBoostMatrix& data, bool margin, int rounds) {
  const std::string config = std::string("{\"type\": ") + (margin ? "1" : "0") +
                             ", \"training\": false, \"iteration_begin\": 0, \"iteration_end\": " +
                             std::to_string(rounds) + ", \"strict_shape\": false}";
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* out = nullptr;
  check_xgboost(
      XGBoosterPredictFromDMatrix(handle_, data.handle(), config.c_str(), &shape, &dim, &out),
      "predicting");
  std::size_t n = 1;
  for (bst_ulong i = 0; i < dim; ++i) n *= shape[i];
  return std::vector<float>(out, out + n);
}

namespace {

// The booster `handle` saved in `format` ("json" or "ubj").
std::string save_as(BoosterHandle handle, const char* format) {
  const std::string config = std::string("{\"format\": \"") + format + "\"}";
  bst_ulong len = 0;
  const char* buf = nullptr;
  check_xgboost(XGBoosterSaveModelToBuffer(handle, config.c_str(), &len, &buf), "saving the model");
  return std::string(buf, len);
}

// Rounds [begin, end) of `handle` as their own booster, saved in `format`.
std::string slice_as(BoosterHandle handle, int begin, int end, const char* format) {
  BoosterHandle part = nullptr;
  check_xgboost(XGBoosterSlice(handle, begin, end, 1, &part), "slicing rounds");
  try {
    std::string saved = save_as(part, format);
    XGBoosterFree(part);
    return saved;
  } catch (...) {
    XGBoosterFree(part);
    throw;
  }
}

}  // namespace

std::string XGBoostBooster::save_json() const { return save_as(handle_, "json"); }
std::string XGBoostBooster::save_ubjson() const { return save_as(handle_, "ubj"); }

std::string XGBoostBooster::slice_json(int begin, int end) const {
  return slice_as(handle_, begin, end, "json");
}

std::string XGBoostBooster::slice_ubjson(int begin, int end) const {
  return slice_as(handle_, begin, end, "ubj");
}

int XGBoostBooster::boosted_rounds() const {
  int rounds = 0;
  check_xgboost(XGBoosterBoostedRounds(handle_, &rounds), "counting rounds");
  return rounds;
}

}  // namespace gradscope
