"""CatBoostCallback: gradscope's round dynamics for CatBoost's fit (docs/trees.md, "In Python").

    import gradscope.trees
    model = catboost.CatBoostClassifier(iterations=200, use_best_model=False)
    cb = gradscope.trees.catboost_callback("runs/cb", data=(x, y), valid=(xv, yv))
    model.fit(x, y, eval_set=(xv, yv), callbacks=[cb])
    summary = cb.finish(model)     # `gradscope report runs/cb` reads the run

CatBoost hands a callback's after_iteration(info) the round's number and metrics, never the
model, and it builds the model object only when fit returns: so the run is written by
finish(model) after fit, from the model's own JSON (CatBoost's JSON model, float features).
When fit raises, CatBoost keeps no trees at all: there is nothing to record. With an eval_set
CatBoost keeps only the rounds up to the best one (use_best_model, on by default), and the
rounds after it, the ones OVERFITTING is about, are gone: finish() warns when the model holds
fewer rounds than were trained.
"""
import os
import tempfile
import warnings

from .._engine import Error
from .._tree_recorder import TreeRecorder
from ._requires import require

_cb = require("catboost", "trees", (1, 2), "catboost 1.2, tested with 1.2.10",
              who="gradscope.trees.catboost_callback", below=(1, 3))

__all__ = ["CatBoostCallback"]


class CatBoostCallback:
    """Counts the rounds of one CatBoost fit (after_iteration) and, at finish(model), judges and
    writes them. `run`, `data`, `valid`, `thresholds`, `overwrite`, `print_report`: as
    XGBoostCallback's."""

    def __init__(self, run="gradscope-runs/catboost", data=None, valid=None, thresholds=None, overwrite=False,
                 print_report=True):
        self._recorder = TreeRecorder("catboost", run, data, valid, thresholds, overwrite, print_report,
                                      "model.json")

    @property
    def summary(self):
        """The TreeSummary once finish(model) ran (None before)."""
        return self._recorder.summary

    def after_iteration(self, info):
        self._recorder.rounds_seen = info.iteration
        return True  # never stops training

    def finish(self, model):
        """Judges the fitted CatBoost `model` and writes the run; the TreeSummary."""
        if self._recorder.summary is not None:
            return self._recorder.summary
        if not isinstance(model, _cb.CatBoost):
            raise Error(f"catboost callback: finish() needs the CatBoost model that was fitted, got "
                        f"{type(model).__name__}")
        if not model.is_fitted():
            raise Error("catboost callback: the model is not fitted (CatBoost keeps no trees when fit raises): "
                        "nothing to record")
        if model.tree_count_ < self._recorder.rounds_seen:
            warnings.warn(f"catboost kept {model.tree_count_} of the {self._recorder.rounds_seen} rounds it trained "
                          "(use_best_model): gradscope judges those; fit with use_best_model=False to have every "
                          "round judged", RuntimeWarning, stacklevel=2)
        return self._recorder.finish(lambda: _json_of(model))


def _json_of(model):
    """The model's JSON: CatBoost writes it only to a file."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "model.json")
        model.save_model(path, format="json")
        with open(path, "rb") as f:
            return f.read()
