"""load_run: any saved run (from Python, C++ or the demo) read back through the C++ run store."""
import os

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


def load_run(path, partial=False, records=False):
    """Reads the run at `path` (a directory or its run.db). Raises gradscope.Error naming the
    file for a missing, damaged or empty run; `partial` reads what a damaged run still holds."""
    return Run(_engine.read_run(os.fspath(path), partial, records))
