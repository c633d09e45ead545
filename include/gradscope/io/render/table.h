// Terminal table of a report: one aligned row per node, then the evidence behind each flag
// and a one-line verdict.
//
//   std::cout << gradscope::render_table(report);
#pragma once

#include <string>

#include "gradscope/core/audit/report.h"

namespace gradscope {

/// Aligned table (node, steps, act|mean|, act std, |out grad|, |param grad|, |param|,
/// grad/param, flags), the evidence lines and the verdict. Absent measures print "-"; node
/// names are escaped by terminal_text (safe_text.h).
std::string render_table(const Report& report, bool with_verdict = true);

/// One line: "verdict: healthy (...)" or "verdict: unhealthy: worst <node> [FLAGS] ...".
std::string render_verdict(const Report& report);

/// One evidence entry without its node: "VANISHING since step 3: mean param_grad L2 over
/// steps = 1.2e-09 < 1e-07 (detail)".
std::string describe_evidence(const Evidence& evidence);

/// A measured number in 3 significant digits ("1.23e-05", "0.5", "-" for NaN).
std::string format_measure(double value);

}  // namespace gradscope
