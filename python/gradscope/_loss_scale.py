"""Mixed precision for an Audit: the loss scale its gradients carry, from a GradScaler, a
scaler of another kind, or a number (docs/python.md, "Your training loop"), handed to the engine,
which reports every gradient statistic unscaled.
"""
import math
import numbers

import torch

from ._engine import Error

# The largest loss scale taken: float32's largest finite value (a GradScaler's scale is a float32
# tensor; the thresholds are scaled by it and must stay finite).
_LARGEST_SCALE = 3.4028234663852886e38

def _torch_grad_scaler(scaler):
    """Whether `scaler` is torch's GradScaler (or a subclass): its per-optimizer stages say when
    unscale_() has run. torch.amp.GradScaler is newer than 1.13; either counts."""
    kinds = tuple(k for k in (getattr(getattr(torch, "amp", None), "GradScaler", None),
                              getattr(torch.cuda.amp, "GradScaler", None)) if isinstance(k, type))
    return isinstance(scaler, kinds)


def _grads_unscaled(scaler, optimizer):
    """Whether scaler.unscale_(optimizer) has run since the scaler's last update(). GradScaler
    keeps this per optimizer (its _per_optimizer_states[id(optimizer)]["stage"], UNSCALED); the
    function form of step() names no optimizer, so there any optimizer unscaled counts. A
    scaler without that state is taken to leave the gradients scaled until its step()."""
    states = getattr(scaler, "_per_optimizer_states", None)
    if not states:
        return False

    def unscaled(state):
        return getattr(state.get("stage"), "name", None) == "UNSCALED"
    if optimizer is not None:
        return id(optimizer) in states and unscaled(states[id(optimizer)])  # `in`: a defaultdict
    return any(unscaled(state) for state in list(states.values()))



class _LossScale:
    """The Audit's scaler handling (a base of Audit: the state it sets is the Audit's)."""

    def _take_scaler(self, scaler, parameter_grads_unscaled):
        if parameter_grads_unscaled is not None and not isinstance(parameter_grads_unscaled, bool):
            raise Error(f"audit: parameter_grads_unscaled must be True, False or None, got {parameter_grads_unscaled!r}")
        if scaler is None:
            if parameter_grads_unscaled is not None:
                raise Error("audit: parameter_grads_unscaled is given without a scaler")
            return
        if isinstance(scaler, numbers.Real) and not isinstance(scaler, bool):
            self.set_loss_scale(scaler, bool(parameter_grads_unscaled))
            return
        if isinstance(scaler, type):
            raise Error(f"audit: scaler must be a GradScaler instance, got the class {scaler.__name__} itself "
                        f"(write scaler={scaler.__name__}(...), the one your loop calls)")
        if not (callable(getattr(scaler, "get_scale", None)) and callable(getattr(scaler, "step", None))):
            raise Error(f"audit: scaler must be a GradScaler (with get_scale() and step()) or a number, "
                        f"got {type(scaler).__name__}")
        if _torch_grad_scaler(scaler):
            if parameter_grads_unscaled is not None:
                raise Error("audit: parameter_grads_unscaled is for scalers that are not torch's GradScaler; a "
                            "GradScaler tells the audit itself when unscale_() has run")
        elif parameter_grads_unscaled is None:
            raise Error(f"audit: scaler {type(scaler).__name__} is not torch's GradScaler, so the audit cannot tell "
                        "whether it unscaled the parameter gradients before step(); say which with "
                        "parameter_grads_unscaled=True (it did: unscale_ before step) or False (they are still "
                        "multiplied by get_scale())")
        self._scaler = scaler
        self._scaler_unscales = parameter_grads_unscaled

    def _set_scaler_scale(self, parameter_grads_unscaled):
        enabled = getattr(self._scaler, "is_enabled", lambda: True)()
        scale = self._scaler.get_scale() if enabled else 1.0
        name = type(self._scaler).__name__
        if isinstance(scale, torch.Tensor) and scale.numel() == 1:
            scale = scale.item()
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not math.isfinite(scale) or scale <= 0:
            raise Error(f"audit: scaler {name}: get_scale() returned {scale!r}; a loss scale is a finite number > 0")
        if scale > _LARGEST_SCALE:
            raise Error(f"audit: scaler {name}: get_scale() returned {scale!r}, above float32's largest "
                        f"({_LARGEST_SCALE:.4g}), which no loss of float16 or bfloat16 can carry")
        self._engine.set_loss_scale(float(scale), parameter_grads_unscaled)

    def set_loss_scale(self, scale, parameter_grads_unscaled=False):
        """Mixed precision by hand: the loss was multiplied by `scale` before backward (call it
        before the step's forward; it holds until changed). `parameter_grads_unscaled`: the
        parameter gradients were divided back before step(). As Audit::set_loss_scale in C++."""
        if isinstance(scale, bool) or not isinstance(scale, numbers.Real) or not math.isfinite(scale) or scale <= 0:
            raise Error(f"audit: set_loss_scale: the scale must be a finite number > 0, got {scale!r}")
        self._engine.set_loss_scale(float(scale), bool(parameter_grads_unscaled))
