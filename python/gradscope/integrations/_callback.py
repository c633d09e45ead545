"""What the trainer callbacks (lightning, transformers) share: their options checked alike, and the
gradient norm they measure after clipping, as torch computes it before."""
import math
import os

import torch

from .._engine import Error


def checked_options(decided, run, flags, audit_options):
    """The run folder (None or a path string) of GradscopeCallback(run=..., **flags, **audit_options),
    after refusing an Audit option the trainer decides (`decided`: name -> why) and a flag that is
    not a bool; gradscope.Error names the argument."""
    for name, why in decided.items():
        if name in audit_options:
            raise Error(f"GradscopeCallback: {name}= is not an option here: {why}")
    if run is not None and not isinstance(run, (str, os.PathLike)):
        raise Error(f"GradscopeCallback: run must be a folder name or path, or None; got {type(run).__name__}")
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise Error(f"GradscopeCallback: {name} must be True or False, got {value!r}")
    return None if run is None else os.fspath(run)


def global_grad_norm(module):
    """The global L2 of `module`'s parameter gradients, as torch.nn.utils.clip_grad_norm_
    computes it; NaN when none has a gradient."""
    grads = [p.grad.detach() for p in module.parameters() if p.grad is not None]
    if not grads:
        return math.nan
    return float(torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g, 2.0) for g in grads]), 2.0))


def end_text(report, what, run_dir, notes=()):
    """What a callback prints when training ends: the report, or that `what` ("this fit", "this
    training") ran no optimizer step; each of `notes` on a line; where the run was saved."""
    if not report.steps:
        return f"gradscope: no optimizer step ran in {what}, so nothing was judged (healthy by default)"
    lines = [str(report)] + [f"gradscope: {note}" for note in notes if note]
    if run_dir:
        lines.append(f"gradscope: run saved in {run_dir}")
    return "\n".join(lines)
