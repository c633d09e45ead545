// The HTML report's "Model" section: the architecture and the warnings the audit saved with
// the run (schema 3), as the audit recorded them; nothing is recomputed here.
#pragma once

#include <string>
#include <vector>

#include "gradscope/core/audit/architecture.h"

namespace gradscope::internal {

/// <section id="model">: one row per node (execution order, id, type, parameters, trainable),
/// and the audit's warnings as a list. Empty when there is neither.
std::string model_section(const Architecture& architecture, const std::vector<std::string>& warnings);

}  // namespace gradscope::internal
