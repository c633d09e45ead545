// gradscope._engine's boosted-tree part: the model readers (trees/read_model.h), the round
// dynamics (core/trees/dynamics.h) over rows given as numpy arrays, and the tree run store
// (io/trees/store.h). gradscope.trees and its XGBoost, LightGBM and CatBoost callbacks stand
// on it. No LibTorch here and no boosting library: the callbacks hand over the model's bytes.
//
//   import gradscope._engine as e
//   m = e.parse_tree_model(booster.save_raw("ubj"), "booster")   # any format, from its content
//   r = e.analyze_trees(m, x_train, y_train, x_valid, y_valid, e.TreeThresholds())
//   e.write_tree_run("runs/gbm", e.TreeRun("model.ubj", "train", "valid", "y", r))
#pragma once

#include <pybind11/pybind11.h>

namespace gradscope::python {

/// Adds TreeModel, TreeThresholds, TreeFinding, TreeReport, TreeRun and the functions over
/// them (parse_tree_model, read_tree_model, analyze_trees, write_tree_run, load_tree_run).
void bind_trees(pybind11::module_& m);

}  // namespace gradscope::python
