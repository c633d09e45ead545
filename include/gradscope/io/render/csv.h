// CSV rendering of a report (RFC 4180 quoting), one row per node. Node names go through
// csv_field (safe_text.h), so a name never becomes a spreadsheet formula.
//
//   std::ofstream("report.csv") << gradscope::render_csv(report);
#pragma once

#include <string>

#include "gradscope/core/audit/report.h"
#include "gradscope/io/render/safe_text.h"

namespace gradscope {

/// Header plus one row per node; absent or non-finite numbers are empty fields and flags are
/// joined with ';'.
std::string render_csv(const Report& report);

/// A number with 17 significant digits (round-trips exactly); empty for NaN and +-Inf.
std::string csv_number(double value);

}  // namespace gradscope
