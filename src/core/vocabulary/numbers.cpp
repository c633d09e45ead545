#include "gradscope/core/vocabulary/numbers.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace gradscope {
namespace {

std::string non_finite(double v) {
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

bool whole(double v) { return v == std::floor(v) && std::fabs(v) < 1e15; }

}  // namespace

std::string exact_number(double v) {
  if (!std::isfinite(v)) return non_finite(v);
  if (whole(v)) return std::to_string(static_cast<int64_t>(v));
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);  // shortest round-trip form
  return std::string(buf, res.ptr);
}

std::string shown_number(double v) {
  if (!std::isfinite(v)) return non_finite(v);
  if (whole(v)) return std::to_string(static_cast<int64_t>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string versus_threshold(double value, double threshold) {
  if (!std::isfinite(value) || !std::isfinite(threshold) || threshold == 0) return "";
  const double ratio = value / threshold;
  if (std::fabs(ratio - 1) < 0.01) return "at the threshold";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3gx the threshold", ratio);
  return buf;
}

}  // namespace gradscope
