// What the tree-reader fuzz targets share: one input is the text of one model file. A
// gradscope::Error is an answer. A model that parses has passed check_ensemble, so it is then
// evaluated on rows that take every kind of branch (zero, NaN, huge, negative, fractional),
// whole and round by round, and transformed: a model that checks out but cannot be evaluated
// safely shows as a crash. Anything else (a crash, a sanitizer report, another exception, a
// hang, an input over its time budget (fuzz_support.h), unbounded memory) is a bug.
//
//   extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
//     return gradscope::fuzz::fuzz_tree_model(data, size, gradscope::ModelFormat::kCatBoostJson);
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "gradscope/core/error.h"
#include "gradscope/trees/read_model.h"

namespace gradscope::fuzz {

// Rows wider than this are not built: a header may claim two billion features, which is a
// model the reader may accept (LightGBM allows it) but no row of which fits in memory here.
constexpr int32_t kMaxEvaluatedFeatures = 1 << 16;

inline volatile double g_sink = 0;  // keeps the evaluation from being optimized away

inline void evaluate(const TreeEnsemble& m) {
  if (m.num_features > kMaxEvaluatedFeatures) return;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const double v : {0.0, nan, 1e30, -1e30, 0.5, -3.0, 2e9}) {
    const std::vector<double> row(static_cast<std::size_t>(m.num_features) + 1, v);
    for (const int32_t rounds : {-1, 0, 1, m.rounds / 2}) {
      const std::vector<double> raw = predict_raw(m, row.data(), rounds);
      for (const double p : transform_scores(m, raw)) g_sink = g_sink + p;
    }
    for (const Tree& t : m.trees) g_sink = g_sink + leaf_of(m, t, row.data());
  }
  for (int32_t f = 0; f < m.num_features && f < 4; ++f) g_sink = g_sink + m.feature_name(f).size();
}

inline int fuzz_tree_model(const uint8_t* data, std::size_t size, ModelFormat format) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  within_budget(size, [&] {
    try {
      evaluate(parse_tree_model(text, "<fuzz input>", format));
    } catch (const Error&) {
    }
  });
  return 0;
}

}  // namespace gradscope::fuzz
