// What every chart spec of the HTML report shares: the Vega-Lite schema, the width, the title
// block, measured numbers as JSON (NaN and Inf as null) and the spec's text.
#pragma once

#include <cmath>
#include <nlohmann/json.hpp>
#include <string>

namespace gradscope::internal {

inline constexpr const char* kVegaLiteSchema = "https://vega.github.io/schema/vega-lite/v6.json";
inline constexpr int kChartWidth = 760;

// Measured numbers: NaN and +-Inf have no JSON form; null leaves the point out of the chart.
inline nlohmann::json chart_number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// ASCII-only JSON (so U+2028 and friends arrive escaped); bytes that are not UTF-8 become U+FFFD
// instead of an exception, since node names are whatever the user's code called them.
inline std::string spec_text(const nlohmann::json& spec) {
  return spec.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace);
}

inline nlohmann::json chart_base(const std::string& title, const nlohmann::json& subtitle) {
  return {{"$schema", kVegaLiteSchema},
          {"title", {{"text", title}, {"subtitle", subtitle}, {"anchor", "start"}}},
          {"width", kChartWidth},
          {"config", {{"view", {{"stroke", nullptr}}}, {"font", "system-ui, sans-serif"}}}};
}

}  // namespace gradscope::internal
