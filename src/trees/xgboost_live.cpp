#include "gradscope/trees/xgboost_live.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "gradscope/core/error.h"
#include "gradscope/core/trees/append.h"
#include "gradscope/trees/read_model.h"

namespace gradscope {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

[[noreturn]] void bad_eval(const std::string& line, const std::string& what) {
  throw Error("xgboost evaluation '" + line.substr(0, 80) + "': " + what);
}

}  // namespace

double RoundMetrics::value(const std::string& name) const {
  for (const auto& [n, v] : values)
    if (n == name) return v;
  return std::numeric_limits<double>::quiet_NaN();
}

RoundMetrics parse_xgboost_eval(const std::string& line) {
  RoundMetrics out;
  const std::size_t close = line.find(']');
  if (line.empty() || line[0] != '[' || close == std::string::npos)
    bad_eval(line, "does not start with [round]");
  char* end = nullptr;
  const long round = std::strtol(line.c_str() + 1, &end, 10);
  if (end != line.c_str() + close || round < 0 || round > INT32_MAX)
    bad_eval(line, "no round number");
  out.round = static_cast<int32_t>(round);
  // Then "\t<matrix>-<metric>:<value>" per matrix and metric; a metric's name may itself hold
  // a ':' (custom metrics), so the value is what follows the last one.
  std::size_t at = close + 1;
  while (at < line.size()) {
    if (line[at] != '\t') bad_eval(line, "expected a tab at byte " + std::to_string(at));
    const std::size_t next = std::min(line.find('\t', at + 1), line.size());
    const std::string item = line.substr(at + 1, next - at - 1);
    const std::size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0)
      bad_eval(line, "\"" + item.substr(0, 40) + "\" is not name:value");
    const std::string text = item.substr(colon + 1);
    const double v = std::strtod(text.c_str(), &end);  // nan and inf are values too
    if (text.empty() || end != text.c_str() + text.size())
      bad_eval(line, "\"" + text.substr(0, 40) + "\" is not a number");
    out.values.emplace_back(item.substr(0, colon), v);
    at = next;
  }
  return out;
}

XGBoostLive::XGBoostLive(XGBoostBooster& booster,
                         std::vector<std::pair<std::string, const XGBoostMatrix*>> evals,
                         XGBoostLiveOptions options)
    : booster_(booster), options_(options) {
  if (options_.every < 0)
    throw Error("xgboost live: every must be at least 0, got " + std::to_string(options_.every));
  if (!(options_.budget > 0 && options_.budget <= 1))
    throw Error("xgboost live: budget must be in (0, 1], got " + std::to_string(options_.budget));
  if (options_.max_every < 1)
    throw Error("xgboost live: max_every must be at least 1, got " +
                std::to_string(options_.max_every));
  for (auto& [name, matrix] : evals) {
    eval_names_.push_back(std::move(name));
    eval_matrices_.push_back(matrix);
  }
}

void XGBoostLive::update(int iteration, const XGBoostMatrix& train) {
  const auto start = Clock::now();
  booster_.update(iteration, train);
  if (!eval_matrices_.empty()) {
    RoundMetrics m = parse_xgboost_eval(booster_.eval(iteration, eval_matrices_, eval_names_));
    metrics_.push_back(std::move(m));
  }
  trained_seconds_ += seconds_since(start);
  ++trained_since_read_;
  const bool due = options_.every > 0
                       ? trained_since_read_ >= options_.every
                       : model_.rounds == 0 || trained_since_read_ >= options_.max_every ||
                             trained_seconds_ * options_.budget >= read_seconds_;
  if (due) read_new_rounds();
}

void XGBoostLive::read_new_rounds() {
  const auto start = Clock::now();
  trained_since_read_ = 0;
  trained_seconds_ = 0;
  const int begin = model_.rounds, end = booster_.boosted_rounds();
  if (end <= begin) return;
  append_rounds(model_, parse_xgboost_ubjson(booster_.slice_ubjson(begin, end),
                                             "xgboost rounds " + std::to_string(begin) + " to " +
                                                 std::to_string(end - 1)));
  read_seconds_ = seconds_since(start);
  if (callback_) callback_(model_, begin);
}

void XGBoostLive::sync() {
  read_new_rounds();
  if (model_.booster != "dart") return;
  // DART keeps every tree's leaves but rescales the weights of trees dropped in later rounds.
  const TreeEnsemble whole = parse_xgboost_ubjson(booster_.save_ubjson(), "xgboost booster");
  if (whole.trees.size() != model_.trees.size())
    throw Error("xgboost live: the booster holds " + std::to_string(whole.trees.size()) +
                " trees, the tracker read " + std::to_string(model_.trees.size()));
  for (std::size_t t = 0; t < whole.trees.size(); ++t)
    model_.trees[t].weight = whole.trees[t].weight;
}

}  // namespace gradscope
