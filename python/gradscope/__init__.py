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
import torch  # loads LibTorch before the engine that links it

from ._build import TORCH_VERSION as _BUILT_AGAINST

# The engine links this one torch's LibTorch: beside another it would fail to load with an
# undefined symbol, or load and misread tensors. Say which two instead.
if torch.__version__ != _BUILT_AGAINST:
    raise ImportError(f"gradscope was built against torch {_BUILT_AGAINST}, but this Python imports torch "
                      f"{torch.__version__} (from {torch.__file__}); rebuild gradscope in this environment "
                      f"(pip install --no-build-isolation . from its source, docs/python.md)")

from ._engine import (ChannelView, EmbeddingIntervention, Error, HealthError, NegativeSampler, NodeScope, Record,
                      Role, Thresholds, stats)
from ._audit import Audit
from ._embedding import EmbeddingHub, EmbeddingTracker
from ._report import Report
from ._run import Run, load_run
from ._scope import register_scope
from . import compress, optim, trees

__all__ = ["Audit", "ChannelView", "EmbeddingHub", "EmbeddingIntervention", "EmbeddingTracker", "Error",
           "HealthError", "NegativeSampler", "NodeScope", "Record", "Report", "Role", "Run", "Thresholds", "compress",
           "load_run", "optim", "register_scope", "stats", "trees"]
__version__ = "0.1.0"
