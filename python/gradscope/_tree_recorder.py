"""What the XGBoost, LightGBM and CatBoost callbacks share (gradscope.trees): the rows and run
folder they were given, and the end of training, where the model's own file is read by the
engine's reader, every round measured and judged, and the run written as `gradscope trees`
writes it (run.db, the analysis inside, the model file beside it), so `gradscope report`,
`html`, `ls` and `diff` read it.

    rec = TreeRecorder("xgboost", "runs/gbm", data=(x, y), valid=(xv, yv))
    rec.source = lambda: bytes(booster.save_raw("ubj"))    # the callback keeps it current
    summary = rec.finish()                                 # at the end of training

As the C++ XGBoostRecorder's destructor does, a recorder whose training stopped before finish()
(an exception, LightGBM's early stopping) writes the rounds so far when its callback is
collected or the interpreter exits (weakref.finalize), and prints a failure to stderr.
"""
import os
import sys
import weakref

from . import _engine
from ._engine import Error, HealthError
from ._tree_rows import rows_of


class TreeSummary:
    """What a tree callback recorded. `run`: the folder written (None when nothing was);
    `rounds`; `report`: the engine's TreeReport (None without rounds); `findings`; `healthy`;
    `verdict`: one line; str(summary): the findings with their evidence, then the verdict."""

    def __init__(self, run, rounds, tree_run=None, verdict=None):
        self.run = run
        self.rounds = rounds
        self.tree_run = tree_run
        self.report = tree_run.report if tree_run is not None else None
        self.findings = list(self.report.findings) if self.report is not None else []
        self.healthy = self.report.healthy() if self.report is not None else True
        self.verdict = verdict if verdict is not None else tree_run.verdict()

    def __str__(self):
        if self.tree_run is None:
            return self.verdict
        where = f"run: {self.run}\n" if self.run else ""
        return where + self.tree_run.findings_text() + "\n" + self.verdict

    def __repr__(self):
        return f"TreeSummary(run={self.run!r}, rounds={self.rounds}, findings={[f.flag for f in self.findings]})"

    def assert_healthy(self):
        """Raises gradscope.HealthError with the verdict when a finding counts against the run."""
        if not self.healthy:
            raise HealthError(self.verdict)


def empty_summary(library):
    """Training that grew no round: nothing to judge, healthy, and it says so."""
    return TreeSummary(None, 0, verdict=f"verdict: healthy: {library} trained no round, nothing to judge "
                                        "(no run written)")


class TreeRecorder:
    """The rows, thresholds and run folder of one training, and its end (finish)."""

    def __init__(self, library, run, data=None, valid=None, thresholds=None, overwrite=False,
                 print_report=True, model_file="model"):
        if run is not None and not isinstance(run, (str, os.PathLike)):
            raise Error(f"{library} callback: run must be a folder or None, got {type(run).__name__}")
        self.library = library
        self.run = None if run is None else os.fspath(run)
        # Refused now, not after hours of training: `gradscope trees` keeps a run unless told.
        if self.run is not None and not overwrite and os.path.exists(os.path.join(self.run, "run.db")):
            raise Error(f"run '{self.run}' exists: pass overwrite=True to replace it, or another run folder")
        self.overwrite = overwrite
        self.print_report = print_report
        self.model_file = model_file
        self.x, self.y = rows_of(data, "data")
        self.valid_x, self.valid_y = rows_of(valid, "valid")
        if self.valid_x is not None and self.valid_y is None:
            raise Error("valid: validation rows need their labels: valid=(x, y)")
        self.thresholds = thresholds if thresholds is not None else _engine.TreeThresholds()
        self.thresholds.validate()
        self.source = None  # a callable returning the model file's bytes, set by the callback
        self.rounds_seen = 0
        self.summary = None
        self.command_line = " ".join(sys.argv)

    @property
    def result(self):
        """The summary once finished; the empty one when training never reached a round (LightGBM
        calls no callback then); None while rounds wait for finish()."""
        if self.summary is None and self.source is None and self.rounds_seen == 0:
            return empty_summary(self.library)
        return self.summary

    def finish(self, source=None):
        """Reads the model, judges its rounds and writes the run (once: later calls return the
        same summary). `source`: the model's bytes, or a callable giving them (default: the
        callback's)."""
        if self.summary is not None:
            return self.summary
        source = source if source is not None else self.source
        data = source() if callable(source) else source
        model = None if data is None else _engine.parse_tree_model(bytes(data), f"{self.library} model")
        if model is None or model.rounds == 0:
            self.summary = empty_summary(self.library)
        else:
            self.summary = self._judge(model, bytes(data))
        if self.print_report:
            print(self.summary, flush=True)
        return self.summary

    def finish_unfinished(self):
        """At collection or exit: the rounds trained so far, if the callback never finished."""
        if self.summary is not None or self.source is None:
            return
        try:
            self.finish()
        except Exception as e:  # noqa: BLE001  (nothing above us can catch it: say it and go on)
            print(f"gradscope: the {self.library} run '{self.run}' was not written: {e}", file=sys.stderr)

    def attach(self, owner):
        """finish_unfinished when `owner` (the callback) is collected or the interpreter exits."""
        weakref.finalize(owner, self.finish_unfinished)

    def _judge(self, model, data):
        report = _engine.analyze_trees(model, self.x, self.y, self.valid_x, self.valid_y, self.thresholds)
        names = ("training rows", "validation rows")
        model_path = self.model_file
        if self.run is not None:
            model_path = os.path.join(self.run, self.model_file)
        tree_run = _engine.TreeRun(model_path, _describe(self.x, names[0]), _describe(self.valid_x, names[1]),
                                   "label" if self.y is not None else "", report)
        if self.run is None:
            return TreeSummary(None, model.rounds, tree_run)
        _engine.write_tree_run(self.run, tree_run, name=os.path.basename(os.path.abspath(self.run)),
                               overwrite=self.overwrite, command_line=self.command_line)
        # The library's own model beside the run: `gradscope trees <run>/model.*` reproduces it.
        with open(model_path, "wb") as f:
            f.write(data)
        return TreeSummary(self.run, model.rounds, tree_run)


def _describe(x, what):
    """'455 training rows' for the run's inputs ('' without rows)."""
    return "" if x is None else f"{len(x)} {what}"


class RecorderFront:
    """What a callback that holds its booster (XGBoost, LightGBM) shows its user: `summary`,
    finish() for training that stopped early, and `with cb:` to finish on the way out."""

    _recorder = None

    @property
    def summary(self):
        """The TreeSummary once written (None while training runs; the empty one when training
        grew no round)."""
        return self._recorder.result

    def finish(self):
        """Writes the rounds trained so far, when training stopped before the callback's own end
        (an exception, LightGBM's early stopping); otherwise the summary already written."""
        return self._recorder.finish()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self._recorder.source is not None:
            self._recorder.finish()
        return False
