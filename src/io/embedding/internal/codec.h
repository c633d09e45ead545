// JSON of embedding reports, both ways, shared by the agent JSON (embedding/json.cpp) and the
// run's saved summary (embedding/store.cpp), so the two never drift apart. Objects keep the
// order the fields are written in, so a report's evidence reads back in its own order.
#pragma once

#include <nlohmann/json.hpp>

#include "gradscope/core/embedding/report.h"
#include "internal/json_field.h"

namespace gradscope::internal {

using Json = nlohmann::ordered_json;

/// A number, or null when it is not finite.
Json json_number(double v);

/// {"layer", "embedding_stats", "diagnostics"}: the inner object of render_embedding_json.
Json report_to_json(const EmbeddingReport& report);
/// Inverse of report_to_json (effective_rank null reads back as -1, "not measured"). Checks
/// every field (types, counts as exact integers, fractions in [0, 1]) and throws Error naming
/// the first bad one.
EmbeddingReport report_from_json(const Field& j);

/// {"a", "b", "pearson", "steps"}.
Json correlation_to_json(const TowerCorrelation& c);
/// Inverse of correlation_to_json, checked as report_from_json is.
TowerCorrelation correlation_from_json(const Field& j);

}  // namespace gradscope::internal
