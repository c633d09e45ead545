"""load_run: any saved run (from Python, C++ or the demo) read back through the C++ run store;
run_path and run_spec: a run named by a caller, checked before the C++ writer sees it."""
import os
import sys

from . import _engine
from ._report import Report


class Run:
    """A saved run: metadata, report over every committed step, the audit's architecture and
    warnings, and (if asked) its records."""

    def __init__(self, native):
        self._native = native
        self.path = native.path
        self.metadata = native.metadata
        self.steps = native.steps
        self.report = Report(native.report)
        self.records = list(native.records)
        self.warnings = list(native.warnings)  # what a partial read skipped
        self.architecture = list(native.architecture)  # the audit's nodes, as Audit.architecture()
        self.audit_warnings = list(native.audit_warnings)  # as Audit.warnings()

    def __repr__(self):
        return f"<gradscope.Run {self.path!r} {self.metadata.name!r}, {self.steps} steps>"


def run_path(run, who):
    """`run` as a path string; gradscope.Error naming `who` for what is not a path."""
    if not isinstance(run, (str, os.PathLike)):
        raise _engine.Error(f"{who}: run must be a path (str or os.PathLike), got {type(run).__name__}")
    return os.fspath(run)


def run_spec(run, run_name, overwrite, who):
    """(dir, name, command line, overwrite) of the run a writer creates, or None without `run`;
    gradscope.Error naming `who` and the argument for a wrong type."""
    if run is None:
        return None
    run = run_path(run, who)
    if run_name is not None and not isinstance(run_name, str):
        raise _engine.Error(f"{who}: run_name must be a string, got {type(run_name).__name__}")
    if not isinstance(overwrite, bool):
        raise _engine.Error(f"{who}: overwrite must be True or False, got {overwrite!r}")
    return (run, run_name or os.path.basename(os.path.normpath(run)), " ".join(sys.argv), overwrite)


def load_run(path, partial=False, records=False):
    """Reads the run at `path` (a directory or its run.db). Raises gradscope.Error naming the
    file for a missing, damaged or empty run; `partial` reads what a damaged run still holds."""
    return Run(_engine.read_run(os.fspath(path), partial, records))
