// CSV rendering of a report (RFC 4180 quoting), one row per node.
//
//   std::ofstream("report.csv") << gradscope::render_csv(report);
#pragma once

#include <string>
#include <string_view>

#include "gradscope/core/report.h"

namespace gradscope {

/// Header plus one row per node; absent or non-finite numbers are empty fields and flags are
/// joined with ';'.
std::string render_csv(const Report& report);

/// A number with 17 significant digits (round-trips exactly); empty for NaN and +-Inf.
std::string csv_number(double value);

/// Quotes a field when it holds a comma, quote, CR or LF (quotes doubled), per RFC 4180.
std::string csv_field(std::string_view text);

}  // namespace gradscope
