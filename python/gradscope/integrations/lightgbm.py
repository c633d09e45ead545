"""LightGBMCallback: gradscope's round dynamics for lightgbm.train (and LGBMModel.fit's
callbacks=[...]): every round measured and judged, the run written when training ends
(docs/trees.md, "In Python").

    import gradscope.trees
    cb = gradscope.trees.lightgbm_callback("runs/lgb", data=(x, y), valid=(xv, yv))
    booster = lightgbm.train(params, dtrain, 200, valid_sets=[dvalid], callbacks=[cb])
    cb.summary.findings            # `gradscope report runs/lgb` reads the run

LightGBM calls a callback after each round and has no end-of-training hook: the run is written
after the last round (env.iteration == env.end_iteration - 1). Training that ends sooner (early
stopping raises past every later callback; an exception) is written by cb.finish(), by leaving
`with cb:`, or when the callback is collected or Python exits. The model is the booster's own
text (model_to_string of every round it holds, not only the best: the rounds after it are what
OVERFITTING is about); with early stopping, pass keep_training_booster=True to lgb.train, which
otherwise keeps only the rounds up to the best (the callback warns when rounds went missing).
"""
import warnings

from .._tree_recorder import RecorderFront, TreeRecorder
from ._requires import require

_lgb = require("lightgbm", "trees", (4, 0), "lightgbm 4.0 to 4.7, tested with 4.7.0",
               who="gradscope.trees.lightgbm_callback", below=(4, 8))

__all__ = ["LightGBMCallback"]


class LightGBMCallback(RecorderFront):
    """Records one lightgbm.train. `run`, `data`, `valid`, `thresholds`, `overwrite`,
    `print_report`: as XGBoostCallback's. `summary` holds the TreeSummary once written."""

    # LightGBM runs its callbacks by this attribute, lowest first: before early_stopping (30),
    # so the round that stops training is seen too.
    order = 5

    def __init__(self, run="gradscope-runs/lightgbm", data=None, valid=None, thresholds=None, overwrite=False,
                 print_report=True):
        self._recorder = TreeRecorder("lightgbm", run, data, valid, thresholds, overwrite, print_report, "model.txt")
        self._recorder.attach(self)

    def __call__(self, env):
        booster, recorder = env.model, self._recorder
        recorder.source = lambda: _text_of(booster, recorder.rounds_seen)
        recorder.rounds_seen = env.iteration - env.begin_iteration + 1
        if env.iteration + 1 == env.end_iteration:
            recorder.finish()


def _text_of(booster, trained):
    """The booster's model text, every round it holds. After early stopping lgb.train reloads
    the booster from the text of its best rounds only (unless keep_training_booster=True), so a
    finish() after train returns sees fewer rounds than were trained: said, not hidden. Keeping
    a copy of every round as it ends would cost more than the training (model_to_string is
    O(model): 78 ms at 500 rounds of 31 leaves, against 22 ms a round of training)."""
    held = booster.current_iteration()
    # best_iteration is set only by early stopping: LightGBM also stops adding trees, with no
    # rounds lost, once no leaf can be split.
    if 0 < booster.best_iteration == held < trained:
        warnings.warn(f"lightgbm kept {held} of the {trained} rounds it trained (after early stopping lgb.train "
                      "keeps the rounds up to the best): gradscope judges those; pass keep_training_booster=True "
                      "to lgb.train to have every round judged", RuntimeWarning, stacklevel=4)
    return booster.model_to_string(num_iteration=-1).encode()
