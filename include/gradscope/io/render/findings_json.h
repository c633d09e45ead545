// Every finding of a saved run in one schema, as JSON, for coding agents and scripts; the
// HTML report's "What to do" lists the same findings (docs/agent-json.md).
//
//   std::vector<gradscope::Finding> f = gradscope::run_findings(report, flow, &embedding, &trees);
//   std::cout << gradscope::render_findings_json(f);
//   // [{"kind": "module", "type": "VANISHING", "node": "fc1", "since_step": 0, "premise": ...,
//   //   "implies": ..., "action": ..., "expected_effect": ..., "confidence": "high",
//   //   "evidence": [{"name": ..., "value": 1e-09, "threshold": 1e-07, "comparison": "<"}]}]
#pragma once

#include <string>
#include <vector>

#include "gradscope/core/findings/findings.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/trees/store.h"

namespace gradscope {

/// Version of the findings schema, written as "findings_version" beside "findings".
inline constexpr int kFindingsVersion = 1;

/// Module findings (worst node first), then the gradient flow's, then each embedding table's,
/// then the trees'. `embedding` and `trees` may be null.
std::vector<Finding> run_findings(const Report& report, const FlowSummary& flow,
                                  const EmbeddingRunSummary* embedding = nullptr,
                                  const TreeRunSummary* trees = nullptr);

/// The findings as a JSON array; non-finite numbers are null, invalid UTF-8 is replaced.
/// `indent` < 0 gives one line.
std::string render_findings_json(const std::vector<Finding>& findings, int indent = 2);

}  // namespace gradscope
