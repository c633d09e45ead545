// JSON rendering of a report, for coding agents and scripts. Non-finite numbers become null.
//
//   std::ofstream("report.json") << gradscope::render_json(report);
//   // {"gradscope_report": {"healthy": false, "nodes": [{"node": "fc1", "flags": [...]}]}}
#pragma once

#include <string>

#include "gradscope/core/audit/report.h"

namespace gradscope {

/// The report as a JSON document; `indent` < 0 gives one line.
std::string render_json(const Report& report, int indent = 2);

}  // namespace gradscope
