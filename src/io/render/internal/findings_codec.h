// Findings as nlohmann JSON, for the documents that embed them (report --json, diff, ls).
#pragma once

#include <nlohmann/json.hpp>
#include <vector>

#include "gradscope/core/findings/findings.h"

namespace gradscope::internal {

/// One finding as an object with the schema's keys, in the schema's order.
nlohmann::ordered_json finding_to_json(const Finding& finding);

/// An array of finding_to_json.
nlohmann::ordered_json findings_to_json(const std::vector<Finding>& findings);

}  // namespace gradscope::internal
