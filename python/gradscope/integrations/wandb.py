"""gradscope in a Weights & Biases run you made with wandb.init(): each audited step's per-node
scalars, the findings as a table and the verdict in the run's summary (docs/wandb.md).

    from gradscope.integrations.wandb import StepLogger, log_report
    run = wandb.init(project="exp1")
    with gradscope.Audit(model, on_step=StepLogger(run)) as audit:  # each audited step, live
        ...  # train; audit.step(opt)
    log_report(audit.report(), run)  # the findings table and the verdict

Where it goes in the run:
- gradscope/<measure>/<node> (grad_l2, update_ratio, activation_zero_frac,
  activation_saturated_frac, activation_nonfinite_frac) and gradscope/flag/<FLAG>/<node> (1 at a
  step whose own value crossed the rule's threshold): the TensorBoard tags, computed by the same
  engine code (_engine.StepScalars), in the run's history, one row per audited step, drawn
  against gradscope/step (the audit's step);
- gradscope/findings: a table, one row per flag of a flagged node, then the loss's;
- gradscope/verdict, gradscope/healthy, gradscope/steps, gradscope/flagged_nodes in the summary.

What it cannot see: the loss and the gradient norms handed to the audit (log them yourself, as
you do); channel views, histograms and attention heads, which TensorBoard
gets (Audit(tensorboard=...)); the advice of each flag (`gradscope report RUN` prints it).
"""
from .._engine import Error, StepScalars, Thresholds
from .._report import Report
from .._run import Run
from ._findings import FINDING_COLUMNS, finding_rows
from ._requires import require

# setup.py's extra: wandb>=0.17,<0.32; a newer wandb works, with a warning.
_wandb = require("wandb", "wandb", (0, 17), "supported: wandb 0.17 to 0.31; tested with 0.31.0", below=(0, 32))

__all__ = ["StepLogger", "log_steps", "log_report"]

PREFIX = "gradscope/"
STEP_KEY = PREFIX + "step"
FINDINGS_KEY = PREFIX + "findings"

# What a report says when no step was audited: nothing was judged, so nothing is wrong (the
# report itself names every node NO_DATA).
_NO_STEP = "no step was audited, so nothing was judged (healthy by default)"


class StepLogger:
    """gradscope.Audit(model, on_step=StepLogger(run)): logs each audited step's scalars into
    `run` (None: wandb.run, the run of the last wandb.init). As wandb.watch does, they join the
    row you are filling (your next run.log writes them, or run.finish), so W&B's step stays
    yours; when you did not log since the previous audited step, that row is written first, so
    no audited step overwrites another. `thresholds`: the Audit's, when it was given its own (the
    per-step flags judge with them)."""

    def __init__(self, run=None, thresholds=None):
        self.run = _the_run(run, "StepLogger")
        _define_axis(self.run)
        self._scalars = _step_scalars(thresholds, "StepLogger")
        self._pending_at = None  # W&B's step when this logger last left a row open

    def __call__(self, records):
        row = _row(self._scalars, records)  # the records of one step
        if not row:
            return
        if self._pending_at is not None and self.run.step == self._pending_at:
            self.run.log({})  # nobody wrote the row holding the previous audited step: write it
        self.run.log(row, commit=False)
        self._pending_at = self.run.step


def log_steps(records, run=None, thresholds=None):
    """Logs the scalars of every step in `records` (audit.records(), which keeps the last
    keep_steps steps, or a gradscope.Run read with load_run(path, records=True)) into `run`,
    step by step; returns the number of rows logged. For a run already trained: the rows are
    drawn against gradscope/step wherever W&B's own step stands. `thresholds` as StepLogger's."""
    if isinstance(records, Run):
        if records.steps and not records.records:
            raise Error(f"log_steps: the run {records.path!r} was read without its records: "
                        "gradscope.load_run(path, records=True)")
        records = records.records
    run = _the_run(run, "log_steps")
    _define_axis(run)
    scalars = _step_scalars(thresholds, "log_steps")
    by_step = {}
    for r in records:
        by_step.setdefault(r.step, []).append(r)
    logged = 0
    for step in sorted(by_step):
        row = _row(scalars, by_step[step])
        if row:
            run.log(row)  # never step=: a row of its own wherever W&B's step stands
            logged += 1
    return logged


def log_report(report, run=None):
    """Logs the findings of `report` (a gradscope.Report, or a gradscope.Run for its report) into
    `run` (None: wandb.run): the table gradscope/findings and, in the summary, gradscope/verdict,
    gradscope/healthy, gradscope/steps and gradscope/flagged_nodes. A report of no step logs an
    empty table, healthy, and says that nothing was judged. Returns the table's rows."""
    if isinstance(report, Run):
        report = report.report
    if not isinstance(report, Report):
        raise Error(f"log_report: report must be a gradscope.Report or gradscope.Run, got {type(report).__name__}")
    run = _the_run(run, "log_report")
    judged = report.steps > 0
    rows = finding_rows(report) if judged else []
    # Into the row W&B is filling, written by your next log or run.finish(): writing it now would
    # close a row you may still add to with log(..., step=), and W&B drops what comes after.
    run.log({FINDINGS_KEY: _wandb.Table(columns=list(FINDING_COLUMNS), data=rows)}, commit=False)
    run.summary.update({PREFIX + "verdict": report.verdict().strip() if judged else _NO_STEP,
                        PREFIX + "healthy": report.healthy() if judged else True,
                        PREFIX + "steps": report.steps,
                        PREFIX + "flagged_nodes": len(report.flagged()) if judged else 0})
    return rows


def _the_run(run, who):
    run = _wandb.run if run is None else run
    if run is None:
        raise Error(f"{who}: no W&B run: call wandb.init() first, or pass run=")
    if not callable(getattr(run, "log", None)) or not callable(getattr(run, "define_metric", None)):
        raise Error(f"{who}: run must be a W&B run (what wandb.init() returns), got {type(run).__name__}")
    return run


def _define_axis(run):
    # The scalars are drawn against the audit's own step, not W&B's: W&B's step only increases,
    # so logging at step=<audit step> would drop every step a run has already passed (a report
    # logged after training, a run that logged more rows than it trained steps).
    run.define_metric(STEP_KEY)
    run.define_metric(PREFIX + "*", step_metric=STEP_KEY)


def _step_scalars(thresholds, who):
    if thresholds is not None and not isinstance(thresholds, Thresholds):
        raise Error(f"{who}: thresholds must be a gradscope.Thresholds, got {type(thresholds).__name__}")
    return StepScalars(thresholds if thresholds is not None else Thresholds())


def _row(scalars, records):
    """The W&B row of one step's records: the TensorBoard tags' scalars under PREFIX and the
    audit's step; {} when they hold none."""
    values = scalars.add(records)
    if not values:
        return {}
    return {STEP_KEY: records[0].step, **{PREFIX + name: value for name, value in values.items()}}
