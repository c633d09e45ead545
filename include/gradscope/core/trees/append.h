// Growing a TreeEnsemble round by round, as a live tracker reads a booster's new rounds: the
// rounds of a second ensemble of the same model (a slice of later rounds) appended to the first.
//
//   gradscope::TreeEnsemble m = gradscope::parse_xgboost_json(booster.slice_json(0, 10), "b");
//   gradscope::append_rounds(m, gradscope::parse_xgboost_json(booster.slice_json(10, 11), "b"));
//   // m.rounds == 11; the new trees have round 10
#pragma once

#include "gradscope/core/trees/model.h"

namespace gradscope {

/// Appends the trees of `later` to `model` as rounds model.rounds, model.rounds + 1, ...
/// Throws Error ("appending rounds: ...") when `later` is not more of the same model: another
/// dialect, objective, booster, number of outputs or features, base score or link; `model` is
/// then unchanged. An empty `model` (no rounds, no outputs) becomes a copy of `later`.
void append_rounds(TreeEnsemble& model, const TreeEnsemble& later);

}  // namespace gradscope
