// Colours and health classes shared by the HTML page and its charts, so a node has the same
// colour in the table, the diagram and the staircase.
#pragma once

#include <nlohmann/json.hpp>

#include "gradscope/core/audit/report.h"

namespace gradscope::theme {

inline constexpr const char* kHealthy = "#2e7d32";
inline constexpr const char* kWarning = "#ef6c00";
inline constexpr const char* kFailing = "#c62828";
inline constexpr const char* kInactive = "#757575";  // frozen, no data
inline constexpr const char* kLine = "#78909c";
inline constexpr const char* kThreshold = "#616161";
inline constexpr const char* kBar = "#3f6fb5";
inline constexpr const char* kZeroCell = "#eceff1";
inline constexpr const char* kNaNCell = "#d81b60";
inline constexpr const char* kInfCell = "#000000";

/// "failing" (NaN, Inf, exploding, dead, vanishing), "warning" (stagnant, channels,
/// saturated, leakage), "inactive" (frozen, no data) or "healthy", by the worst flag.
inline const char* health_class(const NodeReport& node) {
  const int s = node.severity();
  if (s >= flag_severity(Flag::kVanishing)) return "failing";
  if (s >= flag_severity(Flag::kLeakage)) return "warning";
  if (s > 0) return "inactive";
  return "healthy";
}

/// Vega-Lite colour encoding of the field "health" with the fixed palette above.
inline nlohmann::json health_encoding() {
  return {{"field", "health"}, {"type", "nominal"}, {"title", "worst flag"},
          {"scale", {{"domain", {"healthy", "warning", "failing", "inactive"}},
                     {"range", {kHealthy, kWarning, kFailing, kInactive}}}}};
}

}  // namespace gradscope::theme
