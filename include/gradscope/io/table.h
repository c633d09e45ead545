// Terminal table of a report: one aligned row per node, then the evidence behind each flag
// and a one-line verdict.
//
//   std::cout << gradscope::render_table(report);
#pragma once

#include <string>

#include "gradscope/core/report.h"

namespace gradscope {

/// Aligned table (node, steps, act|mean|, act std, |out grad|, |param grad|, |param|,
/// grad/param, flags), the evidence lines and the verdict. Absent measures print "-".
std::string render_table(const Report& report);

/// One line: "verdict: healthy (...)" or "verdict: unhealthy: worst <node> [FLAGS] ...".
std::string render_verdict(const Report& report);

/// A measured number in 3 significant digits ("1.23e-05", "0.5", "-" for NaN).
std::string format_measure(double value);

}  // namespace gradscope
