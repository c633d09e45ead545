// A tree run as text for the terminal (`gradscope trees`, `gradscope report` on a tree run):
// the model and data, the round timeline in windows, the findings with their evidence and
// advice, what could not be judged, the features and the interaction suggestions.
//
//   std::cout << gradscope::render_tree_timeline(summary) <<
//   gradscope::render_tree_findings(summary); std::string v = gradscope::tree_verdict(&summary); //
//   "; trees: STAGNANT from round 0"
//
// Every string from the model or the file (feature names, paths, objective) is escaped by
// terminal_text; every number is one the analysis measured.
#pragma once

#include <string>

#include "gradscope/io/trees/store.h"

namespace gradscope {

/// "model: ...", "data: ...", then one row per window: rounds, mean and max |round output|,
/// velocity, mean |leaf|, HHI, top feature with its share, drift, training and validation loss.
std::string render_tree_timeline(const TreeRunSummary& summary);

/// "findings: N" and per finding its flag, round, advice and evidence; "not judged:" lines;
/// the features with the most gain; the interaction suggestions and the collinear pairs dropped.
std::string render_tree_findings(const TreeRunSummary& summary);

/// "; trees: STAGNANT from round 0, CONCENTRATED on 'leak'" naming each finding that counts
/// (not the tentative ones), "" when there is none or no summary.
std::string tree_verdict(const TreeRunSummary* summary);

/// What the run's verdict says of trees with no finding that counts: "no findings", or "1
/// tentative finding, not counted" (tentative findings are listed, never counted).
std::string tree_quiet_verdict(const TreeRunSummary& summary);

/// "verdict: healthy: no tree finding", "verdict: healthy: 1 tentative tree finding, not counted
/// against the run", or "verdict: unhealthy: trees: STAGNANT from round 0".
std::string tree_run_verdict(const TreeRunSummary& summary);

/// "held-out gain 0.05 (p 0.001), " for a tested interaction pair, "" for an untested one.
std::string interaction_test_text(const InteractionPair& pair);

/// A finding in one phrase: "OVERFITTING from round 6", "CONCENTRATED on 'leak'" (escaped).
std::string tree_finding_label(const TreeDynamicsReport& report, const TreeFinding& finding);

/// The trees.json document (as save_tree_summary writes it), as one JSON text.
std::string render_tree_json(const TreeRunSummary& summary, int indent = 2);

}  // namespace gradscope
