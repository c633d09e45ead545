"""Boosted trees: the round dynamics of XGBoost, LightGBM and CatBoost models, from their files
or live from the training packages (docs/trees.md, "In Python").

    import gradscope.trees
    cb = gradscope.trees.xgboost_callback("runs/xgb", data=(x, y), valid=(xv, yv))
    booster = xgboost.train(params, xgboost.DMatrix(x, y), 200, callbacks=[cb])
    print(cb.summary.verdict)      # "verdict: unhealthy: trees: OVERFITTING from round 6"

    m = gradscope.trees.read_model("model.txt")              # any of the formats, from content
    m.predict_raw(x), m.predict(x)                          # as the library predicts
    r = gradscope.trees.analyze(m, data=(x, y), valid=(xv, yv))   # r.findings, r.valid_loss

The readers, measures and rules are the C++ engine's, the same `gradscope trees` runs; only the
callbacks need their package (pip install 'gradscope[trees]'), each imported when it is made, so
`import gradscope.trees` needs none of them.
"""
import os

from . import _engine
from ._engine import Error, TreeFinding, TreeModel, TreeReport, TreeThresholds
from ._tree_recorder import TreeSummary
from ._tree_rows import rows_of

__all__ = ["Error", "TreeFinding", "TreeModel", "TreeReport", "TreeSummary", "TreeThresholds", "analyze",
           "catboost_callback", "lightgbm_callback", "parse_model", "read_model", "xgboost_callback"]


def read_model(path, format="auto"):
    """The model in the file `path` (XGBoost JSON or UBJSON, LightGBM text or dump_model JSON,
    CatBoost JSON); `format` forces one ("xgboost-ubjson", ...)."""
    return _engine.read_tree_model(os.fspath(path), format)


def parse_model(data, name="model", format="auto"):
    """The model held in `data`: the bytes of its file (booster.save_raw(), a str of JSON or text)."""
    if isinstance(data, str):
        data = data.encode()
    return _engine.parse_tree_model(bytes(data), name, format)


def analyze(model, data=None, valid=None, thresholds=None):
    """Every round of `model` measured and judged (a TreeReport): `data` the training rows,
    `valid` the labelled validation rows, each (x, y) or the library's container."""
    x, y = rows_of(data, "data")
    vx, vy = rows_of(valid, "valid")
    return _engine.analyze_trees(model, x, y, vx, vy, thresholds if thresholds is not None else TreeThresholds())


def xgboost_callback(run="gradscope-runs/xgboost", *, data=None, valid=None, thresholds=None, overwrite=False,
                     print_report=True):
    """An xgboost.callback.TrainingCallback that judges every round and writes the run at the end
    of training (gradscope.integrations.xgboost)."""
    from .integrations.xgboost import XGBoostCallback
    return XGBoostCallback(run, data, valid, thresholds, overwrite, print_report)


def lightgbm_callback(run="gradscope-runs/lightgbm", *, data=None, valid=None, thresholds=None, overwrite=False,
                      print_report=True):
    """A LightGBM callback (callable(env)) that judges every round and writes the run after the
    last one; after early stopping, call its finish() (gradscope.integrations.lightgbm)."""
    from .integrations.lightgbm import LightGBMCallback
    return LightGBMCallback(run, data, valid, thresholds, overwrite, print_report)


def catboost_callback(run="gradscope-runs/catboost", *, data=None, valid=None, thresholds=None, overwrite=False,
                      print_report=True):
    """A CatBoost callback (after_iteration(info)); CatBoost shows callbacks no model, so the run is
    written by its finish(model) after fit (gradscope.integrations.catboost)."""
    from .integrations.catboost import CatBoostCallback
    return CatBoostCallback(run, data, valid, thresholds, overwrite, print_report)
