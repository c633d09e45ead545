"""XGBoostCallback: gradscope's round dynamics for xgboost.train (and the scikit-learn wrappers'
callbacks=[...]): every round measured and judged, the run written when training ends
(docs/trees.md, "In Python").

    import gradscope.trees
    cb = gradscope.trees.xgboost_callback("runs/xgb", data=(x, y), valid=(xv, yv))
    booster = xgboost.train(params, dtrain, 200, callbacks=[cb])
    cb.summary.findings            # also printed; `gradscope report runs/xgb` reads the run

The callback keeps the booster it is handed after each round; at after_training (also after
XGBoost's early stopping) it reads the booster's own UBJSON, XGBoost 3's default format and
far quicker to write than JSON, so the run holds exactly the trees XGBoost holds.
"""
from .._tree_recorder import RecorderFront, TreeRecorder
from ._requires import require

_xgb = require("xgboost", "trees", (3, 0), "xgboost 3.0 to 3.2, tested with 3.2.0",
               who="gradscope.trees.xgboost_callback", below=(3, 3))
from xgboost.callback import TrainingCallback  # noqa: E402  (after the check, which names the extra)

__all__ = ["XGBoostCallback"]


class XGBoostCallback(TrainingCallback, RecorderFront):
    """Records one xgboost.train. `run`: the run's folder (None: judge, write nothing); `data`,
    `valid`: the training and validation rows ((x, y), a DMatrix); `thresholds`:
    gradscope.trees.TreeThresholds; `overwrite`: replace a run there; `print_report`: print the
    findings at the end. After training, `summary` holds the TreeSummary."""

    def __init__(self, run="gradscope-runs/xgboost", data=None, valid=None, thresholds=None, overwrite=False,
                 print_report=True):
        super().__init__()
        self._recorder = TreeRecorder("xgboost", run, data, valid, thresholds, overwrite, print_report, "model.ubj")
        self._recorder.attach(self)

    def before_training(self, model):
        self._keep(model)
        return model

    def after_iteration(self, model, epoch, evals_log):
        self._keep(model)
        self._recorder.rounds_seen += 1
        return False  # never stops training

    def after_training(self, model):
        self._keep(model)
        self._recorder.finish()
        return model

    def _keep(self, booster):
        self._recorder.source = lambda: booster.save_raw("ubj")
