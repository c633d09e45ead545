"""gradscope for PyTorch: which node is failing, how, since when, with what evidence.

    import gradscope
    with gradscope.Audit(model, run="runs/exp1") as audit:
        for x, y in loader:
            opt.zero_grad(); loss_fn(model(x), y).backward()
            audit.step(opt)                  # or: opt.step(); audit.after_step()
    print(audit.report())                    # the table `gradscope report runs/exp1` prints
    audit.assert_healthy()                   # raises gradscope.HealthError naming the worst nodes

The statistics, rules, reports and run store are gradscope's C++ engine (gradscope._engine);
this package only decides what to measure and when, from PyTorch module hooks.
"""
import torch  # noqa: F401  (loads LibTorch before the engine that links it)

from ._engine import (ChannelView, EmbeddingIntervention, Error, HealthError, NegativeSampler, NodeScope, Record,
                      Role, Thresholds, stats)
from ._audit import Audit
from ._embedding import EmbeddingHub, EmbeddingTracker
from ._report import Report
from ._run import Run, load_run
from ._scope import register_scope
from . import compress, optim

__all__ = ["Audit", "ChannelView", "EmbeddingHub", "EmbeddingIntervention", "EmbeddingTracker", "Error",
           "HealthError", "NegativeSampler", "NodeScope", "Record", "Report", "Role", "Run", "Thresholds", "compress",
           "load_run", "optim", "register_scope", "stats"]
__version__ = "0.1.0"
